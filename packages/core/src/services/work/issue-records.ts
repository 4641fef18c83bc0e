import { SlawError, invalid, notFound } from '../../errors.js'
import { issuePriorities, type Comment, type Interaction, type InteractionKind, type Issue, type IssueDocument } from '../../records.js'
import type { Actor } from '../foundation/actor.js'
import { isPrivileged } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import { author, type IssueService } from './issues.js'
import { outboxUpserts, recordActivities, recordActivity, type ActivityInput } from '../audit/activity-recorder.js'
import { GroupCommit } from '../foundation/group-commit.js'
import type { SquadService } from '../org/squads.js'
import type { StorageSession } from '../../contracts/storage.js'
import { wakeOnMentions } from '../runs/wake-causes.js'
import { queueWake } from '../runs/wakes.js'

const documentKeyPattern = /^[a-z0-9][a-z0-9._-]{0,63}$/

/** Comments, documents and interactions: the records that hang off one issue. */
export class IssueRecordService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly issues: IssueService,
    private readonly squads: SquadService,
  ) {}

  // Comments -------------------------------------------------------------------------------------

  async listComments(actor: Actor, issueId: string, opts: { after?: string; order?: 'asc' | 'desc'; limit?: number }): Promise<Comment[]> {
    const { storage } = this.ctx
    const issue = await this.issues.visible(storage, actor, issueId)
    let after: Comment | undefined
    if (opts.after !== undefined) {
      after = isUuid(opts.after) ? await storage.comments.get(issue.id, opts.after) : undefined
      if (!after) throw invalid('/after', 'after must be the id of a comment on this issue')
    }
    return storage.comments.list(issue.id, { ...(after ? { after } : {}), order: opts.order ?? 'asc', limit: opts.limit ?? 100 })
  }

  async getComment(actor: Actor, issueId: string, commentId: string): Promise<Comment> {
    const issue = await this.issues.visible(this.ctx.storage, actor, issueId)
    const comment = isUuid(commentId) ? await this.ctx.storage.comments.get(issue.id, commentId) : undefined
    if (!comment) throw notFound('Comment')
    return comment
  }

  /**
   * Any agent of the squad may comment (comments are how agents talk); `reopen` on a done or
   * cancelled issue sets it back to `todo` and clears its checkout (docs/issues.md). Joins the
   * caller's transaction when there is one; `submitComment` is the cheaper path for a caller without.
   */
  async addComment(actor: Actor, issueId: string, input: { body: string; reopen?: boolean }): Promise<Comment> {
    if (!input.body.trim()) throw invalid('/body', 'body must not be blank')
    let wakes = 0
    const added = await this.ctx.storage.transaction(async (tx) => {
      // The squad row is share-locked: an archive racing this comment waits for it, or it sees archived.
      const { issue, squad } = await this.issues.writable(tx, actor, issueId, { anyAgentOfSquad: true, lockSquad: 'share' })
      const [written] = await this.writeComments(tx, [{ actor, issue, squadId: squad.id, input }])
      wakes = written!.wakes
      return written!.comment
    })
    if (wakes) this.ctx.kickJobs()
    return added
  }

  /**
   * `addComment` for a caller without a transaction of its own (the HTTP route): comments submitted
   * at the same moment share one transaction (group commit), one insert and one activity statement.
   * One comment's refusal never fails the others; a batch that fails as a whole is retried one by one.
   */
  submitComment(actor: Actor, issueId: string, input: { body: string; reopen?: boolean }): Promise<Comment> {
    if (!input.body.trim()) return Promise.reject(invalid('/body', 'body must not be blank'))
    return this.commentBatch.submit({ actor, issueId, input })
  }

  private readonly commentBatch = new GroupCommit<{ actor: Actor; issueId: string; input: { body: string; reopen?: boolean } }, Comment>(
    (items) => this.commentMany(items),
    (item) => this.addComment(item.actor, item.issueId, item.input),
    64,
    2,
  )

  private async commentMany(items: Array<{ actor: Actor; issueId: string; input: { body: string; reopen?: boolean } }>): Promise<Array<PromiseSettledResult<Comment>>> {
    let wakes = 0
    const results = await this.ctx.storage.transaction(async (tx) => {
      // Each issue and squad is read once for the batch (the squad share-locked, as addComment does).
      const memo = new Map<string, Promise<unknown>>()
      const once = <T>(key: string, read: () => Promise<T>): Promise<T> => (memo.get(key) ?? memo.set(key, read()).get(key)!) as Promise<T>
      const checked = await Promise.allSettled(
        items.map(async (it) => {
          const issue = await this.issues.visibleRow(it.actor, it.issueId, (id) => once(`i${id}`, () => tx.issues.get(id)))
          const squad = await this.squads.writableRow(it.actor, issue.squadId, () => once(`s${issue.squadId}`, () => tx.squads.get(issue.squadId, { lock: 'share' })))
          return { actor: it.actor, issue, squadId: squad.id, input: it.input }
        }),
      )
      const ok = checked.flatMap((c) => (c.status === 'fulfilled' ? [c.value] : []))
      const written = await this.writeComments(tx, ok)
      for (const w of written) wakes += w.wakes
      let k = 0
      return checked.map((c): PromiseSettledResult<Comment> => (c.status === 'rejected' ? c : { status: 'fulfilled', value: written[k++]!.comment }))
    })
    if (wakes) this.ctx.kickJobs()
    return results
  }

  /** Writes checked comments: one insert for all, reopens, one statement for every activity entry, mention wakes. */
  private async writeComments(
    tx: StorageSession,
    adds: Array<{ actor: Actor; issue: Issue; squadId: string; input: { body: string; reopen?: boolean } }>,
  ): Promise<Array<{ comment: Comment; wakes: number }>> {
    if (!adds.length) return []
    const comments = await tx.comments.insert(adds.map((a) => ({ id: uuidv7(), issueId: a.issue.id, squadId: a.squadId, body: a.input.body, ...author(a.actor) })))
    const entries: Array<{ actor: Actor; input: ActivityInput }> = []
    for (const [k, a] of adds.entries()) {
      const { issue } = a
      const reopened = a.input.reopen === true && (issue.status === 'done' || issue.status === 'cancelled')
      const outbox = reopened ? [outboxUpserts.issue((await tx.issues.update(issue.id, { status: 'todo', checkoutAgentId: null }))!)] : []
      entries.push({
        actor: a.actor,
        input: {
          squadId: a.squadId,
          action: 'issue.comment_added',
          entityType: 'issue',
          entityId: issue.id,
          details: { identifier: issue.identifier, commentId: comments[k]!.id, ...(reopened ? { reopenedFrom: issue.status } : {}) },
          outbox,
        },
      })
    }
    await recordActivities(tx, entries)
    const out: Array<{ comment: Comment; wakes: number }> = []
    for (const [k, a] of adds.entries()) out.push({ comment: comments[k]!, wakes: await wakeOnMentions(tx, a.actor, a.issue, comments[k]!.id, a.input.body) })
    return out
  }

  // Documents ------------------------------------------------------------------------------------

  async listDocuments(actor: Actor, issueId: string): Promise<IssueDocument[]> {
    const issue = await this.issues.visible(this.ctx.storage, actor, issueId)
    return this.ctx.storage.documents.list(issue.id)
  }

  async getDocument(actor: Actor, issueId: string, key: string): Promise<IssueDocument> {
    const issue = await this.issues.visible(this.ctx.storage, actor, issueId)
    const doc = documentKeyPattern.test(key) ? await this.ctx.storage.documents.get(issue.id, key) : undefined
    if (!doc) throw notFound('Document')
    return doc
  }

  /** Optimistic concurrency: the write names the revision it saw; a stale one answers 409 revision_conflict. */
  async putDocument(
    actor: Actor,
    issueId: string,
    key: string,
    input: { title: string; format: 'markdown'; body: string; baseRevisionId?: string | null },
  ): Promise<{ document: IssueDocument; created: boolean }> {
    if (!documentKeyPattern.test(key)) throw invalid('/key', 'key must be 1-64 lowercase letters, digits, dots, dashes or underscores')
    if (!input.title.trim()) throw invalid('/title', 'title must not be blank')
    return this.ctx.storage.transaction(async (tx) => {
      const { issue, squad } = await this.issues.writable(tx, actor, issueId)
      const base = input.baseRevisionId ?? null
      if (base !== null && !isUuid(base)) throw new SlawError('revision_conflict')
      const existing = await tx.documents.get(issue.id, key)
      const document = await tx.documents.put({
        id: existing?.id ?? uuidv7(),
        issueId: issue.id,
        key,
        title: input.title,
        format: input.format,
        body: input.body,
        baseRevisionId: base,
        newRevisionId: uuidv7(),
      })
      if (!document)
        throw new SlawError('revision_conflict', existing ? 'The document changed since baseRevisionId; reload and retry.' : 'The document does not exist; send baseRevisionId null to create it.')
      await recordActivity(tx, actor, {
        squadId: squad.id,
        action: existing ? 'issue.document_updated' : 'issue.document_created',
        entityType: 'issue',
        entityId: issue.id,
        details: { identifier: issue.identifier, key, revisionId: document.revisionId },
      })
      return { document, created: !existing }
    })
  }

  async deleteDocument(actor: Actor, issueId: string, key: string): Promise<void> {
    await this.ctx.storage.transaction(async (tx) => {
      const { issue, squad } = await this.issues.writable(tx, actor, issueId)
      if (!documentKeyPattern.test(key) || !(await tx.documents.delete(issue.id, key))) throw notFound('Document')
      await recordActivity(tx, actor, { squadId: squad.id, action: 'issue.document_deleted', entityType: 'issue', entityId: issue.id, details: { identifier: issue.identifier, key } })
    })
  }

  // Interactions ---------------------------------------------------------------------------------

  async listInteractions(actor: Actor, issueId: string): Promise<Interaction[]> {
    const issue = await this.issues.visible(this.ctx.storage, actor, issueId)
    return this.ctx.storage.interactions.list(issue.id)
  }

  async createInteraction(
    actor: Actor,
    issueId: string,
    input: { kind: InteractionKind; payload: Record<string, unknown>; continuationPolicy?: 'wake_assignee'; idempotencyKey?: string },
  ): Promise<{ interaction: Interaction; created: boolean }> {
    validateInteractionPayload(input.kind, input.payload)
    return this.ctx.storage.transaction(async (tx) => {
      const { issue, squad } = await this.issues.writable(tx, actor, issueId)
      const who = author(actor)
      const result = await tx.interactions.insert({
        id: uuidv7(),
        issueId: issue.id,
        squadId: squad.id,
        kind: input.kind,
        payload: input.payload,
        continuationPolicy: input.continuationPolicy ?? null,
        idempotencyKey: input.idempotencyKey ?? null,
        createdByType: who.authorType,
        createdById: who.authorId,
      })
      if (result.created) {
        await recordActivity(tx, actor, {
          squadId: squad.id,
          action: 'issue.interaction_created',
          entityType: 'issue',
          entityId: issue.id,
          details: { identifier: issue.identifier, interactionId: result.interaction.id, kind: input.kind },
        })
      }
      return result
    })
  }

  /**
   * Answers a pending interaction (Operator, or another agent of the squad). Accepting
   * `suggest_tasks` creates the suggested tasks as child issues. With continuationPolicy
   * `wake_assignee`, the issue's assignee gets a queued wake.
   */
  async resolveInteraction(
    actor: Actor,
    issueId: string,
    interactionId: string,
    action: 'accept' | 'reject' | 'respond',
    input: { note?: string; response?: Record<string, unknown> },
  ): Promise<{ interaction: Interaction; createdIssueIds: string[] }> {
    const result = await this.ctx.storage.transaction(async (tx) => {
      const { issue, squad } = await this.issues.writable(tx, actor, issueId, { anyAgentOfSquad: true })
      const current = isUuid(interactionId) ? await tx.interactions.get(issue.id, interactionId) : undefined
      if (!current) throw notFound('Interaction')
      if (!isPrivileged(actor) && actor.type === 'agent' && current.createdByType === 'agent' && current.createdById === actor.agentId) {
        throw new SlawError('forbidden', 'An agent cannot answer its own interaction.')
      }
      if (current.status !== 'pending') throw new SlawError('invalid_state', `The interaction is already ${current.status}.`)
      if (action === 'respond' && !input.response) throw invalid('/response', 'respond needs a response object')
      const status = action === 'accept' ? 'accepted' : action === 'reject' ? 'rejected' : 'responded'
      const response = action === 'respond' ? input.response! : input.note !== undefined ? { note: input.note } : null
      const interaction = await tx.interactions.resolve(current.id, status, response)
      if (!interaction) throw new SlawError('invalid_state', 'The interaction was answered concurrently.')
      const createdIssueIds = action === 'accept' && current.kind === 'suggest_tasks' ? await this.createSuggestedTasks(actor, current, squad.id) : []
      await recordActivity(tx, actor, {
        squadId: squad.id,
        action: `issue.interaction_${status}`,
        entityType: 'issue',
        entityId: issue.id,
        details: { identifier: issue.identifier, interactionId: current.id, kind: current.kind, createdIssues: createdIssueIds.length },
      })
      let woke = false
      if (current.continuationPolicy === 'wake_assignee' && issue.assigneeAgentId) {
        const assignee = await tx.agents.get(issue.assigneeAgentId)
        if (assignee?.status === 'active') {
          await queueWake(tx, { squadId: squad.id, agentId: assignee.id, issueId: issue.id, reason: 'interaction' })
          woke = true
        }
      }
      return { interaction, createdIssueIds, woke }
    })
    if (result.woke) this.ctx.kickJobs()
    return { interaction: result.interaction, createdIssueIds: result.createdIssueIds }
  }

  private async createSuggestedTasks(actor: Actor, interaction: Interaction, squadId: string): Promise<string[]> {
    const tasks = (interaction.payload.tasks as Array<{ title: string; description?: string; priority?: 'critical' | 'high' | 'medium' | 'low' }>) ?? []
    const ids: string[] = []
    // The answering actor may not own the parent; the tasks are created on the squad's behalf.
    const creator: Actor = actor.type === 'agent' ? { type: 'system', id: 'interaction' } : actor
    for (const task of tasks) {
      // storage.transaction joins the caller's transaction, so these commit with the answer.
      const created = await this.issues.create(creator, squadId, {
        title: task.title,
        description: task.description ?? null,
        priority: task.priority ?? 'medium',
        parentId: interaction.issueId,
      })
      ids.push(created.id)
    }
    return ids
  }
}

function validateInteractionPayload(kind: InteractionKind, payload: Record<string, unknown>): void {
  const isStr = (v: unknown): v is string => typeof v === 'string' && v.trim().length > 0
  if (kind === 'request_confirmation' && !isStr(payload.prompt)) throw invalid('/payload/prompt', 'request_confirmation needs payload.prompt (string)')
  if (kind === 'suggest_tasks') {
    const tasks = payload.tasks
    if (!Array.isArray(tasks) || !tasks.length || tasks.length > 50 || !tasks.every((t) => t && typeof t === 'object' && !Array.isArray(t) && isStr((t as Record<string, unknown>).title))) {
      throw invalid('/payload/tasks', 'suggest_tasks needs payload.tasks: 1-50 objects with a title')
    }
    // Accepting creates these as issues: hold them to the issue create rules now, not at accept time.
    tasks.forEach((task: Record<string, unknown>, i) => {
      const at = `/payload/tasks/${i}`
      if ((task.title as string).length > 500) throw invalid(`${at}/title`, 'a task title has at most 500 characters')
      if (task.description !== undefined && task.description !== null && (typeof task.description !== 'string' || task.description.length > 200_000)) {
        throw invalid(`${at}/description`, 'a task description is a string of at most 200000 characters')
      }
      if (task.priority !== undefined && !(issuePriorities as readonly unknown[]).includes(task.priority)) {
        throw invalid(`${at}/priority`, `a task priority is one of: ${issuePriorities.join(', ')}`)
      }
    })
  }
  if (kind === 'ask_user_questions') {
    const qs = payload.questions
    if (!Array.isArray(qs) || !qs.length || !qs.every((q) => q && typeof q === 'object' && isStr((q as Record<string, unknown>).question))) {
      throw invalid('/payload/questions', 'ask_user_questions needs payload.questions: objects with a question')
    }
  }
}
