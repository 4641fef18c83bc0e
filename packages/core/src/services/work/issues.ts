import { SlawError, invalid, notFound } from '../../errors.js'
import { UniqueViolation, type IssuePatch, type NewIssue, type SquadRowLock, type StorageSession } from '../../contracts/storage.js'
import type { ActivityEntry, Agent, Issue, IssuePriority, IssueRef, IssueStatus, IssueSummary, Squad } from '../../records.js'
import { assertSquadVisible, isPrivileged, visibleById, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import { outboxUpserts, recordActivities, recordActivity } from '../audit/activity-recorder.js'
import { GroupCommit } from '../foundation/group-commit.js'
import { IssueCheckout, type CheckoutGuard, type CheckoutInput } from './checkout.js'
import type { SquadService } from '../org/squads.js'
import { wakeOnAssignment, wakeOnChildrenDone, wakeOnMentions, type AssignmentWake } from '../runs/wake-causes.js'
import { inSquad } from '../foundation/same-squad.js'

export type { CheckoutGuard, CheckoutInput } from './checkout.js'
const defaultInboxStatuses: IssueStatus[] = ['todo', 'in_progress', 'in_review', 'blocked']
/** A checked create, before numbering gives it its number and identifier. */
type NewCreatedIssue = Omit<NewIssue, 'number' | 'identifier'>

export interface IssueDetail extends Issue {
  blockedByIssueIds: string[]
  blockedBy: IssueRef[]
  blocks: IssueRef[]
  ancestors: IssueRef[]
}

export interface CreateIssueInput {
  title: string
  description?: string | null
  status?: IssueStatus
  priority?: IssuePriority
  assigneeAgentId?: string | null
  parentId?: string | null
  goalId?: string | null
  projectId?: string | null
  blockedByIssueIds?: string[]
  billingCode?: string | null
}

export interface UpdateIssueInput {
  status?: IssueStatus
  priority?: IssuePriority
  title?: string
  description?: string | null
  assigneeAgentId?: string | null
  assigneeUserId?: string | null
  blockedByIssueIds?: string[]
  comment?: string
  projectId?: string | null
  goalId?: string | null
}

export interface ListIssuesInput {
  status?: IssueStatus[]
  assigneeAgentId?: string
  projectId?: string
  q?: string
  limit?: number
  offset?: number
}

export class IssueService {
  private readonly checkouts: IssueCheckout

  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
  ) {
    this.checkouts = new IssueCheckout(ctx, squads, this)
  }

  /** Adds a check every checkout (and every run start) must pass: budgets, fleet limits. */
  addCheckoutGuard(guard: CheckoutGuard): void {
    this.checkouts.addGuard(guard)
  }

  /** Runs every checkout guard for work an agent is about to do (the run engine's gates). */
  checkGuards(tx: StorageSession, input: { issue: Issue | null; agent: Agent; squad: Squad }): Promise<void> {
    return this.checkouts.checkGuards(tx, input)
  }

  /** Loads an issue the actor may see (by UUID, or by identifier when allowed), or 404. */
  /** `visible` by id, for a caller that reads the row itself (a batch reading each issue once). */
  async visibleRow(actor: Actor, id: string, read: (id: string) => Promise<Issue | undefined>): Promise<Issue> {
    return visibleById(actor, id, 'Issue', read)
  }

  async visible(session: StorageSession, actor: Actor, idOrIdentifier: string, opts: { identifier?: boolean } = {}): Promise<Issue> {
    let issue: Issue | undefined
    if (isUuid(idOrIdentifier)) issue = await session.issues.get(idOrIdentifier)
    else if (opts.identifier && /^[A-Za-z]{1,4}-\d{1,9}$/.test(idOrIdentifier)) issue = await session.issues.getByIdentifier(idOrIdentifier.toUpperCase())
    if (!issue) throw notFound('Issue')
    assertSquadVisible(actor, issue.squadId, 'Issue')
    return issue
  }

  /** Agents mutate only issues assigned to them or checked out by them; Operators any. */
  private assertCanMutate(actor: Actor, issue: Issue): void {
    if (isPrivileged(actor)) return
    if (actor.type === 'agent' && (issue.assigneeAgentId === actor.agentId || issue.checkoutAgentId === actor.agentId)) return
    throw new SlawError('forbidden', 'An agent may change only issues assigned to it.')
  }

  /** The issue, for a write: visible, mutable by the actor, in a squad that is not archived. */
  async writable(tx: StorageSession, actor: Actor, id: string, opts: { anyAgentOfSquad?: boolean; lockSquad?: SquadRowLock } = {}): Promise<{ issue: Issue; squad: Squad }> {
    const issue = await this.visible(tx, actor, id)
    if (!opts.anyAgentOfSquad) this.assertCanMutate(actor, issue)
    const squad = await this.squads.writable(tx, actor, issue.squadId, opts.lockSquad)
    return { issue, squad }
  }

  async list(actor: Actor, squadId: string, input: ListIssuesInput): Promise<IssueSummary[]> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    if (input.assigneeAgentId !== undefined && !isUuid(input.assigneeAgentId)) throw invalid('/assigneeAgentId', 'must be a UUID')
    if (input.projectId !== undefined && !isUuid(input.projectId)) throw invalid('/projectId', 'must be a UUID')
    const q = input.q?.trim()
    return this.ctx.storage.issues.list({
      squadId,
      ...(input.status?.length ? { statuses: input.status } : {}),
      ...(input.assigneeAgentId ? { assigneeAgentId: input.assigneeAgentId } : {}),
      ...(input.projectId ? { projectId: input.projectId } : {}),
      ...(q ? { q } : {}),
      limit: input.limit ?? 100,
      offset: input.offset ?? 0,
    })
  }

  async inbox(actor: Actor, statuses: IssueStatus[] | undefined, limit = 100): Promise<IssueSummary[]> {
    if (actor.type !== 'agent') throw new SlawError('forbidden', 'The inbox belongs to an agent key.')
    return this.ctx.storage.issues.inbox(actor.agentId, statuses?.length ? statuses : defaultInboxStatuses, limit)
  }

  async get(actor: Actor, id: string): Promise<IssueDetail> {
    // Hot path: one round trip for the issue and its links; identifiers take the general path.
    if (isUuid(id)) {
      const found = await this.ctx.storage.issues.getWithLinks(id)
      if (!found) throw notFound('Issue')
      assertSquadVisible(actor, found.issue.squadId, 'Issue')
      const { issue, blockedBy, blocks } = found
      const ancestors = issue.parentId ? await this.ctx.storage.issues.ancestors(issue.id) : []
      return { ...issue, blockedByIssueIds: blockedBy.map((b) => b.id), blockedBy, blocks, ancestors }
    }
    const issue = await this.visible(this.ctx.storage, actor, id, { identifier: true })
    return this.detail(this.ctx.storage, issue)
  }

  async detail(session: StorageSession, issue: Issue): Promise<IssueDetail> {
    const [blockedBy, blocks, ancestors] = await Promise.all([
      session.issues.blockedBy(issue.id),
      session.issues.blocks(issue.id),
      issue.parentId ? session.issues.ancestors(issue.id) : Promise.resolve([]),
    ])
    return { ...issue, blockedByIssueIds: blockedBy.map((b) => b.id), blockedBy, blocks, ancestors }
  }

  /**
   * Creates an issue; its assignee is woken in the same transaction. `wake` names the cause when it
   * is not a plain assignment (a routine run's issue wakes with reason `routine` and the run's env).
   */
  /**
   * Creates an issue in its own transaction, or inside the caller's when there is one (routines,
   * imports, a child issue). For a caller without a transaction, `submitCreate` is cheaper.
   */
  async create(actor: Actor, squadId: string, input: CreateIssueInput, opts: { wake?: AssignmentWake } = {}): Promise<IssueDetail> {
    let wakes = 0
    const created = await this.ctx.storage.transaction(async (tx) => {
      const fields = await this.checkCreate(tx, actor, squadId, input, () => tx.squads.get(squadId))
      const [detail] = await this.writeCreated(tx, [{ actor, input, fields, opts }])
      wakes = detail!.wakes
      return detail!.issue
    })
    if (wakes) this.ctx.kickJobs()
    return created
  }

  /**
   * `create` for a caller without a transaction of its own (the HTTP route): creates submitted at
   * the same moment share one transaction (group commit), so a squad's row, which numbering holds
   * until commit, is taken once per batch instead of once per issue. One create's refusal never
   * fails the others; a batch that fails as a whole is retried create by create.
   */
  submitCreate(actor: Actor, squadId: string, input: CreateIssueInput): Promise<IssueDetail> {
    return this.createBatch.submit({ actor, squadId, input })
  }

  private readonly createBatch = new GroupCommit<{ actor: Actor; squadId: string; input: CreateIssueInput }, IssueDetail>(
    (items) => this.createMany(items),
    (item) => this.create(item.actor, item.squadId, item.input),
    64,
    2,
  )

  /**
   * Creates many issues in one transaction (the caller's, when it has one: a group of routine
   * fires): one settled result per item, in order, a refusal failing only its item. `readSquad`
   * and `readAgent` serve squads and assignees the caller read already; each other squad and
   * assignee is read once.
   */
  async createMany(
    items: Array<{ actor: Actor; squadId: string; input: CreateIssueInput; opts?: { wake?: AssignmentWake } }>,
    readSquad?: (id: string) => Promise<Squad | undefined>,
    readAgent?: (id: string) => Promise<Agent | undefined>,
  ): Promise<Array<PromiseSettledResult<IssueDetail>>> {
    let wakes = 0
    const results = await this.ctx.storage.transaction(async (tx) => {
      // Each squad and assignee is read once for the batch; refusals are per create.
      const read = readSquad ?? readingOnce((id) => tx.squads.get(id))
      const agentOf = readAgent ?? readingOnce((id) => tx.agents.get(id))
      const checked = await Promise.allSettled(items.map((it) => this.checkCreate(tx, it.actor, it.squadId, it.input, () => read(it.squadId), agentOf)))
      const ok = items.flatMap((it, i) => {
        const c = checked[i]!
        return c.status === 'fulfilled' ? [{ index: i, actor: it.actor, input: it.input, fields: c.value, opts: it.opts ?? {} }] : []
      })
      const written = ok.length ? await this.writeCreated(tx, ok) : []
      const byIndex = new Map(ok.map((o, k) => [o.index, written[k]!]))
      for (const w of written) wakes += w.wakes
      return checked.map((c, i): PromiseSettledResult<IssueDetail> => (c.status === 'rejected' ? c : { status: 'fulfilled', value: byIndex.get(i)!.issue }))
    })
    if (wakes) this.ctx.kickJobs()
    return results
  }

  /** Everything a create checks before writing: reads only, no locks. */
  private async checkCreate(
    tx: StorageSession,
    actor: Actor,
    squadId: string,
    input: CreateIssueInput,
    readSquad: () => Promise<Squad | undefined>,
    readAgent?: (id: string) => Promise<Agent | undefined>,
  ): Promise<NewCreatedIssue> {
    await this.squads.writableRow(actor, squadId, readSquad)
    const title = input.title.trim()
    if (!title) throw invalid('/title', 'title must not be blank')
    const status = input.status ?? 'todo'
    if (status === 'in_progress') throw invalid('/status', 'an issue moves to in_progress by checkout, not on create')
    await this.checkRefs(tx, squadId, input, null, readAgent)
    return {
      id: uuidv7(),
      squadId,
      title,
      description: input.description ?? null,
      status,
      priority: input.priority ?? 'medium',
      assigneeAgentId: input.assigneeAgentId ?? null,
      assigneeUserId: null,
      parentId: input.parentId ?? null,
      goalId: input.goalId ?? null,
      projectId: input.projectId ?? null,
      billingCode: input.billingCode ?? null,
    }
  }

  /**
   * Writes checked creates: one statement numbers and inserts them all, one writes their activity
   * entries and outbox rows. Squads' rows are held from numbering to commit, so nothing that only
   * reads comes after it but the new issues' own relations.
   */
  private async writeCreated(
    tx: StorageSession,
    creates: Array<{ actor: Actor; input: CreateIssueInput; fields: NewCreatedIssue; opts: { wake?: AssignmentWake } }>,
  ): Promise<Array<{ issue: IssueDetail; wakes: number }>> {
    let issues: Array<Issue | undefined>
    try {
      issues = await tx.issues.insertNumbered(creates.map((c) => c.fields))
    } catch (err) {
      if (err instanceof UniqueViolation) throw new SlawError('conflict', 'Concurrent issue numbering conflict; retry.')
      throw err
    }
    // Archived since it was read (it was writable then): nothing was inserted for it, and the
    // transaction rolls back; in a batch, each create is then retried alone and answered alone.
    if (issues.some((i) => !i)) throw new SlawError('squad_archived')
    const made = issues as Issue[]
    for (const [k, c] of creates.entries()) {
      if (c.input.blockedByIssueIds?.length) await tx.issues.setBlockers(made[k]!.id, unique(c.input.blockedByIssueIds))
    }
    const activity = recordActivities(
      tx,
      creates.map((c, k) => {
        const issue = made[k]!
        return {
          actor: c.actor,
          input: {
            squadId: issue.squadId,
            action: 'issue.created',
            entityType: 'issue',
            entityId: issue.id,
            details: { identifier: issue.identifier, status: issue.status, priority: issue.priority },
            outbox: [outboxUpserts.issue(issue)],
          },
        }
      }),
    )
    // The activity, every create's wake and reads at once: their statements pipeline, so a batch
    // pays the round trips of one create, not of each (wakes of distinct new issues touch no row in common).
    const details = Promise.all(
      creates.map(async (c, k) => {
        const issue = made[k]!
        const wakes = await wakeOnAssignment(tx, c.actor, issue, c.opts.wake)
        // A new issue blocks nothing yet: skip the queries detail() would spend on that.
        const [blockedBy, ancestors] = await Promise.all([
          c.input.blockedByIssueIds?.length ? tx.issues.blockedBy(issue.id) : Promise.resolve([]),
          issue.parentId ? tx.issues.ancestors(issue.id) : Promise.resolve([]),
        ])
        return { issue: { ...issue, blockedByIssueIds: blockedBy.map((b) => b.id), blockedBy, blocks: [], ancestors }, wakes }
      }),
    )
    const [, out] = await Promise.all([activity, details])
    return out
  }

  /** Validates ids an issue points at: all must live in the same squad. */
  private async checkRefs(tx: StorageSession, squadId: string, input: CreateIssueInput | UpdateIssueInput, selfId: string | null, readAgent = (id: string) => tx.agents.get(id)): Promise<void> {
    if (input.assigneeAgentId) {
      const found = isUuid(input.assigneeAgentId) ? await readAgent(input.assigneeAgentId) : undefined
      const agent = inSquad(found, squadId, '/assigneeAgentId', 'assigneeAgentId must be an agent of this squad')
      if (agent.status === 'terminated') throw invalid('/assigneeAgentId', 'a terminated agent cannot be assigned')
    }
    if ('parentId' in input && input.parentId) {
      if (input.parentId === selfId) throw invalid('/parentId', 'an issue cannot be its own parent')
      const found = isUuid(input.parentId) ? await tx.issues.existingIds(squadId, [input.parentId]) : []
      if (!found.length) throw invalid('/parentId', 'parentId must be an issue of this squad')
    }
    if (input.goalId) {
      inSquad(isUuid(input.goalId) ? await tx.goals.get(input.goalId) : undefined, squadId, '/goalId', 'goalId must be a goal of this squad')
    }
    if (input.projectId) {
      inSquad(isUuid(input.projectId) ? await tx.projects.get(input.projectId) : undefined, squadId, '/projectId', 'projectId must be a project of this squad')
    }
    if (input.blockedByIssueIds?.length) {
      const ids = unique(input.blockedByIssueIds)
      if (selfId && ids.includes(selfId)) throw invalid('/blockedByIssueIds', 'an issue cannot block itself')
      const bad = ids.filter((id) => !isUuid(id))
      const found = bad.length ? [] : await tx.issues.existingIds(squadId, ids)
      if (bad.length || found.length !== ids.length) throw invalid('/blockedByIssueIds', 'every blocker must be an issue of this squad')
    }
  }

  async update(actor: Actor, id: string, input: UpdateIssueInput): Promise<IssueDetail> {
    let wakes = 0
    const updated = await this.ctx.storage.transaction(async (tx) => {
      const { issue: current, squad } = await this.writable(tx, actor, id)
      await this.checkRefs(tx, squad.id, input, current.id)
      const patch: IssuePatch = {}
      if (input.title !== undefined) {
        const title = input.title.trim()
        if (!title) throw invalid('/title', 'title must not be blank')
        patch.title = title
      }
      if (input.description !== undefined) patch.description = input.description
      if (input.priority !== undefined) patch.priority = input.priority
      if (input.assigneeUserId !== undefined) patch.assigneeUserId = input.assigneeUserId
      if (input.projectId !== undefined) patch.projectId = input.projectId
      if (input.goalId !== undefined) patch.goalId = input.goalId
      if (input.status !== undefined && input.status !== current.status) {
        if (input.status === 'in_progress') throw new SlawError('invalid_state', 'An issue moves to in_progress by checkout, not by PATCH.')
        patch.status = input.status
        // Finished work holds no checkout.
        if (input.status === 'done' || input.status === 'cancelled') patch.checkoutAgentId = null
      }
      if (input.assigneeAgentId !== undefined && input.assigneeAgentId !== current.assigneeAgentId) {
        patch.assigneeAgentId = input.assigneeAgentId
        // A new assignee takes the work over: the previous holder's checkout ends.
        if (current.checkoutAgentId && current.checkoutAgentId !== input.assigneeAgentId) patch.checkoutAgentId = null
      }
      const issue = Object.keys(patch).length ? (await tx.issues.update(current.id, patch))! : current
      if (input.blockedByIssueIds !== undefined) await tx.issues.setBlockers(current.id, unique(input.blockedByIssueIds))
      if (patch.title !== undefined || patch.description !== undefined) await tx.issues.refreshSearch(current.id)
      let commentId: string | undefined
      if (input.comment !== undefined && input.comment.trim()) {
        commentId = uuidv7()
        await tx.comments.insert([{ id: commentId, issueId: current.id, squadId: squad.id, body: input.comment, ...author(actor) }])
      }
      await recordActivity(tx, actor, {
        squadId: squad.id,
        action: patch.status ? 'issue.status_changed' : 'issue.updated',
        entityType: 'issue',
        entityId: current.id,
        details: {
          identifier: current.identifier,
          fields: [...Object.keys(patch), ...(input.blockedByIssueIds !== undefined ? ['blockedByIssueIds'] : [])].join(','),
          ...(patch.status ? { from: current.status, to: patch.status } : {}),
          ...(commentId ? { commentId } : {}),
        },
        outbox: [outboxUpserts.issue(issue)],
      })
      if (patch.assigneeAgentId) wakes += await wakeOnAssignment(tx, actor, issue)
      if (commentId) wakes += await wakeOnMentions(tx, actor, issue, commentId, input.comment!)
      if (patch.status) wakes += await wakeOnChildrenDone(tx, issue)
      return this.detail(tx, issue)
    })
    if (wakes) this.ctx.kickJobs()
    return updated
  }

  async delete(actor: Actor, id: string): Promise<void> {
    await this.ctx.storage.transaction(async (tx) => {
      // Visibility first: another squad's agent gets 404, never 403.
      await this.visible(tx, actor, id)
      if (!isPrivileged(actor)) throw new SlawError('forbidden', 'Deleting issues needs an Operator key.')
      const { issue, squad } = await this.writable(tx, actor, id)
      await tx.issues.delete(issue.id)
      await recordActivity(tx, actor, {
        squadId: squad.id,
        action: 'issue.deleted',
        entityType: 'issue',
        entityId: issue.id,
        details: { identifier: issue.identifier },
        outbox: [outboxUpserts.issue(issue, true)],
      })
    })
  }

  /** Atomic checkout (docs/issues.md); inside a caller's transaction it joins that transaction. */
  checkout(actor: Actor, id: string, input: CheckoutInput): Promise<Issue> {
    return this.checkouts.checkout(actor, id, input)
  }

  /** `checkout` for a caller without a transaction of its own (the HTTP route): group-committed. */
  submitCheckout(actor: Actor, id: string, input: CheckoutInput): Promise<Issue> {
    return this.checkouts.submit(actor, id, input)
  }

  release(actor: Actor, id: string): Promise<Issue> {
    return this.checkouts.release(actor, id)
  }

  async heartbeatContext(
    actor: Actor,
    id: string,
  ): Promise<{ issue: IssueDetail; ancestors: IssueRef[]; commentCursor: { totalComments: number; latestCommentId: string | null; latestCommentAt: Date | null } }> {
    const issue = await this.get(actor, id)
    const commentCursor = await this.ctx.storage.comments.cursor(issue.id)
    return { issue, ancestors: issue.ancestors, commentCursor }
  }

  async activity(actor: Actor, idOrIdentifier: string, limit: number): Promise<ActivityEntry[]> {
    const issue = await this.visible(this.ctx.storage, actor, idOrIdentifier, { identifier: true })
    return this.ctx.storage.activity.list({ squadId: issue.squadId, entityType: 'issue', entityId: issue.id, limit })
  }
}

export function author(actor: Actor): { authorType: 'agent' | 'user' | 'system'; authorId: string } {
  if (actor.type === 'agent') return { authorType: 'agent', authorId: actor.agentId }
  if (actor.type === 'operator') return { authorType: 'user', authorId: actor.keyId ? `operator:${actor.keyId}` : 'operator' }
  return { authorType: 'system', authorId: actor.id }
}

function unique<T>(xs: T[]): T[] {
  return [...new Set(xs)]
}

/** `read`, asked once per id: later calls for an id share its first answer. */
function readingOnce<T>(read: (id: string) => Promise<T>): (id: string) => Promise<T> {
  const answers = new Map<string, Promise<T>>()
  return (id) => {
    let answer = answers.get(id)
    if (!answer) answers.set(id, (answer = read(id)))
    return answer
  }
}
