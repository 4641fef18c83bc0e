import { SlawError, invalid } from '../../errors.js'
import type { StorageSession } from '../../contracts/storage.js'
import type { Approval, ApprovalComment, ApprovalStatus } from '../../contracts/governance.js'
import type { IssueSummary } from '../../records.js'
import { actorColumns, isPrivileged, requireOperator, visibleById, type Actor } from '../foundation/actor.js'
import type { AgentService, CreateAgentInput } from '../org/agents.js'
import type { ServiceContext } from '../foundation/context.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import { author } from '../work/issues.js'
import { recordActivity } from '../audit/activity-recorder.js'
import { validateAdapterConfig } from '../org/agent-adapter-config.js'
import { queueWake } from '../runs/wakes.js'
import type { SquadService } from '../org/squads.js'
import { inSquad } from '../foundation/same-squad.js'

/** The payload of a `request_board_approval`. */
interface BoardPayload {
  title: string
  summary: string
  recommendedAction?: string | null
  risks?: string[]
}

/** What an agent hire asks for; it becomes the payload of a `hire_agent` approval. */
export interface HireRequest {
  name: string
  role: string
  reason?: string | null
  adapterType?: string
  title?: string | null
  reportsToAgentId?: string | null
  prompt?: string | null
  desiredSkills?: string[]
  /** The hired agent's adapter config; never shown in the approval (Operator-only on the agent). */
  adapterConfig?: Record<string, unknown>
}

export interface CreateApprovalInput {
  type: 'request_board_approval'
  requestedByAgentId: string
  issueIds?: string[]
  payload: BoardPayload
}

/**
 * Approvals: `pending` → `approved` | `rejected` | `revision_requested`, and
 * `revision_requested` → `pending` on resubmit. Any other move answers 422 invalid_state.
 * Approve, reject and request-revision are Operator decisions; the requester (its agent key) or an
 * Operator resubmits. Approving a `hire_agent` approval creates the agent in the same transaction.
 */
export class ApprovalService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
    private readonly agents: AgentService,
  ) {}

  async visible(session: StorageSession, actor: Actor, id: string): Promise<Approval> {
    return visibleById(actor, id, 'Approval', (id) => session.approvals.get(id))
  }

  async get(actor: Actor, id: string): Promise<Approval & { issueIds: string[] }> {
    const approval = await this.visible(this.ctx.storage, actor, id)
    return { ...approval, issueIds: await this.ctx.storage.approvals.linkedIssueIds(id) }
  }

  async list(actor: Actor, squadId: string, filter: { statuses?: ApprovalStatus[]; issueId?: string; limit?: number; offset?: number }): Promise<Approval[]> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    return this.ctx.storage.approvals.list({
      squadId,
      ...(filter.statuses?.length ? { statuses: filter.statuses } : {}),
      ...(filter.issueId ? { issueId: filter.issueId } : {}),
      limit: Math.min(Math.max(filter.limit ?? 100, 1), 500),
      offset: filter.offset ?? 0,
    })
  }

  async create(actor: Actor, squadId: string, input: CreateApprovalInput): Promise<Approval & { issueIds: string[] }> {
    return this.ctx.storage.transaction(async (tx) => {
      await this.squads.writable(tx, actor, squadId)
      if (actor.type === 'agent' && actor.agentId !== input.requestedByAgentId) throw new SlawError('forbidden', 'An agent files approvals in its own name only.')
      const payload = normaliseBoardPayload(input.payload)
      const named = isUuid(input.requestedByAgentId) ? await tx.agents.get(input.requestedByAgentId) : undefined
      const requester = inSquad(named, squadId, '/requestedByAgentId', 'requestedByAgentId must be an agent of this squad')
      const issueIds = [...new Set(input.issueIds ?? [])]
      if (issueIds.length) {
        const bad = issueIds.some((i) => !isUuid(i))
        const found = bad ? [] : await tx.issues.existingIds(squadId, issueIds)
        if (bad || found.length !== issueIds.length) throw invalid('/issueIds', 'every issueId must be an issue of this squad')
      }
      const approval = await tx.approvals.insert({ id: uuidv7(), squadId, type: input.type, requestedByAgentId: requester.id, payload: { ...payload } })
      await tx.approvals.linkIssues(approval.id, issueIds)
      await recordActivity(tx, actor, {
        squadId,
        action: 'approval.created',
        entityType: 'approval',
        entityId: approval.id,
        agentId: requester.id,
        details: { type: approval.type, title: payload.title, issues: issueIds.length },
      })
      return { ...approval, issueIds: issueIds.sort() }
    })
  }

  /** An agent (or an Operator) asks to hire an agent: a pending `hire_agent` approval; nothing is created yet. */
  async hire(actor: Actor, squadId: string, input: HireRequest): Promise<Approval> {
    return this.ctx.storage.transaction(async (tx) => {
      await this.squads.writable(tx, actor, squadId)
      const requester = actor.type === 'agent' ? await tx.agents.get(actor.agentId) : undefined
      const payload = await this.checkHire(tx, actor, squadId, input, requester?.adapterType)
      const approval = await tx.approvals.insert({ id: uuidv7(), squadId, type: 'hire_agent', requestedByAgentId: requester?.id ?? null, payload: { ...payload } })
      await recordActivity(tx, actor, {
        squadId,
        action: 'approval.created',
        entityType: 'approval',
        entityId: approval.id,
        details: { type: 'hire_agent', name: payload.name, role: payload.role, adapterType: payload.adapterType ?? null },
      })
      return approval
    })
  }

  async approve(actor: Actor, id: string, input: { decisionNote?: string | null }): Promise<Approval> {
    return this.kickAfter(
      this.ctx.storage.transaction(async (tx) => {
        const current = await this.pendingOrFail(tx, actor, id, 'approved')
        await this.squads.writable(tx, actor, current.squadId)
        // The conditional update goes first: a concurrent decision waits on the row, then finds it
        // no longer pending and answers 422; only one hire ever creates an agent.
        let approval = await this.decide(tx, actor, current, 'approved', input.decisionNote)
        let details: Record<string, unknown> = {}
        if (approval.type === 'hire_agent') {
          const hire = approval.payload as unknown as HireRequest
          const agent = await this.agents.createIn(tx, actor, approval.squadId, toCreateAgent(hire))
          approval = (await tx.approvals.transition(approval.id, ['approved'], { status: 'approved', hiredAgentId: agent.id }))!
          details = { hiredAgentId: agent.id, name: agent.name }
        }
        await this.recordDecision(tx, actor, approval, 'approval.approved', details)
        return approval
      }),
    )
  }

  async reject(actor: Actor, id: string, input: { decisionNote?: string | null }): Promise<Approval> {
    return this.kickAfter(
      this.ctx.storage.transaction(async (tx) => {
        const current = await this.pendingOrFail(tx, actor, id, 'rejected')
        await this.squads.writable(tx, actor, current.squadId)
        const approval = await this.decide(tx, actor, current, 'rejected', input.decisionNote)
        await this.recordDecision(tx, actor, approval, 'approval.rejected')
        return approval
      }),
    )
  }

  /** Sends a pending approval back to its requester (an Operator decision, like approve and reject). */
  async requestRevision(actor: Actor, id: string, input: { decisionNote?: string | null }): Promise<Approval> {
    return this.kickAfter(
      this.ctx.storage.transaction(async (tx) => {
        const current = await this.pendingOrFail(tx, actor, id, 'sent back for revision')
        await this.squads.writable(tx, actor, current.squadId)
        const approval = await this.decide(tx, actor, current, 'revision_requested', input.decisionNote)
        await this.recordDecision(tx, actor, approval, 'approval.revision_requested')
        return approval
      }),
    )
  }

  async resubmit(actor: Actor, id: string, input: { payload: Record<string, unknown> }): Promise<Approval> {
    return this.ctx.storage.transaction(async (tx) => {
      const current = await this.visible(tx, actor, id)
      if (!isPrivileged(actor) && !(actor.type === 'agent' && current.requestedByAgentId === actor.agentId)) {
        throw new SlawError('forbidden', 'Only the requesting agent or an Operator resubmits an approval.')
      }
      if (current.status !== 'revision_requested') throw new SlawError('invalid_state', `The approval is ${current.status}; only one sent back for revision can be resubmitted.`)
      await this.squads.writable(tx, actor, current.squadId)
      let payload: Record<string, unknown>
      if (current.type === 'hire_agent') {
        if (!('name' in input.payload) || !('role' in input.payload)) throw invalid('/payload', 'a hire_agent approval is resubmitted with a hire request (name, role, ...)')
        const requester = current.requestedByAgentId ? await tx.agents.get(current.requestedByAgentId) : undefined
        payload = { ...(await this.checkHire(tx, actor, current.squadId, input.payload as unknown as HireRequest, requester?.adapterType)) }
      } else {
        if (!('title' in input.payload) || !('summary' in input.payload)) throw invalid('/payload', 'a request_board_approval is resubmitted with title and summary')
        payload = { ...normaliseBoardPayload(input.payload as unknown as BoardPayload) }
      }
      const approval = await tx.approvals.transition(id, ['revision_requested'], { status: 'pending', payload, decisionNote: null, decidedBy: null, decidedAt: null, bumpRevision: true })
      if (!approval) throw new SlawError('invalid_state', 'The approval changed meanwhile; reload it.')
      await recordActivity(tx, actor, {
        squadId: approval.squadId,
        action: 'approval.resubmitted',
        entityType: 'approval',
        entityId: approval.id,
        agentId: approval.requestedByAgentId,
        details: { type: approval.type, revision: approval.revision },
      })
      return approval
    })
  }

  async issues(actor: Actor, id: string): Promise<IssueSummary[]> {
    const approval = await this.visible(this.ctx.storage, actor, id)
    return this.ctx.storage.approvals.linkedIssues(approval.id)
  }

  async comments(actor: Actor, id: string, limit = 500): Promise<ApprovalComment[]> {
    const approval = await this.visible(this.ctx.storage, actor, id)
    return this.ctx.storage.approvals.comments(approval.id, limit)
  }

  /** Operators and the squad's agents discuss an approval in any state. */
  async addComment(actor: Actor, id: string, input: { body: string }): Promise<ApprovalComment> {
    if (!input.body.trim()) throw invalid('/body', 'body must not be blank')
    return this.ctx.storage.transaction(async (tx) => {
      const approval = await this.visible(tx, actor, id)
      await this.squads.writable(tx, actor, approval.squadId)
      const comment = await tx.approvals.insertComment({ id: uuidv7(), approvalId: approval.id, squadId: approval.squadId, body: input.body, ...author(actor) })
      await recordActivity(tx, actor, { squadId: approval.squadId, action: 'approval.comment_added', entityType: 'approval', entityId: approval.id, details: { commentId: comment.id } })
      return comment
    })
  }

  // Internals ------------------------------------------------------------------------------------

  /** Visibility first (another squad's agent gets 404), then the Operator check, then the state. */
  private async pendingOrFail(tx: StorageSession, actor: Actor, id: string, verb: string): Promise<Approval> {
    const approval = await this.visible(tx, actor, id)
    requireOperator(actor)
    if (approval.status !== 'pending') throw new SlawError('invalid_state', `The approval is ${approval.status}; only a pending approval can be ${verb}.`)
    return approval
  }

  private async decide(tx: StorageSession, actor: Actor, current: Approval, status: ApprovalStatus, note: string | null | undefined): Promise<Approval> {
    const approval = await tx.approvals.transition(current.id, ['pending'], {
      status,
      decisionNote: note ?? null,
      decidedBy: actorColumns(actor).actorId,
      decidedAt: this.ctx.now(),
    })
    if (!approval) throw new SlawError('invalid_state', 'The approval was decided meanwhile; it is no longer pending.')
    return approval
  }

  /** After a decision commits, the job runner looks for the requester's wake at once. */
  private async kickAfter(decision: Promise<Approval>): Promise<Approval> {
    const approval = await decision
    if (approval.requestedByAgentId) this.ctx.kickJobs()
    return approval
  }

  private async recordDecision(tx: StorageSession, actor: Actor, approval: Approval, action: string, extra: Record<string, unknown> = {}): Promise<void> {
    // The requesting agent learns of the decision: a wake with SVC_APPROVAL_ID, in this transaction.
    if (approval.requestedByAgentId) {
      const requester = await tx.agents.get(approval.requestedByAgentId)
      if (requester && requester.status !== 'terminated') {
        await queueWake(tx, { squadId: approval.squadId, agentId: requester.id, issueId: null, reason: 'approval_decided', approvalId: approval.id })
      }
    }
    await recordActivity(tx, actor, {
      squadId: approval.squadId,
      action,
      entityType: 'approval',
      entityId: approval.id,
      agentId: approval.requestedByAgentId,
      details: { type: approval.type, ...(approval.decisionNote ? { decisionNote: approval.decisionNote } : {}), ...extra },
    })
  }

  /** Validates a hire against the squad as it is now, and fills in the adapter type. */
  private async checkHire(tx: StorageSession, actor: Actor, squadId: string, input: HireRequest, requesterAdapter: string | undefined): Promise<HireRequest> {
    const name = input.name.trim()
    if (!name) throw invalid('/name', 'name must not be blank')
    const role = input.role.trim()
    if (!role) throw invalid('/role', 'role must not be blank')
    // Without an adapterType the hire runs like the agent that asked for it, else like the
    // instance's first registered adapter.
    const adapterType = input.adapterType ?? (requesterAdapter && this.ctx.adapters.has(requesterAdapter) ? requesterAdapter : [...this.ctx.adapters.keys()][0])
    if (!adapterType || !this.ctx.adapters.has(adapterType)) {
      throw invalid('/adapterType', `adapterType must be one of: ${[...this.ctx.adapters.keys()].join(', ') || '(none registered)'}`)
    }
    if (input.adapterConfig) validateAdapterConfig(this.ctx, actor, adapterType, input.adapterConfig)
    const agents = await tx.agents.list(squadId)
    if (agents.some((a) => a.name === name)) throw new SlawError('agent_name_taken')
    if (input.reportsToAgentId && !agents.some((a) => a.id === input.reportsToAgentId)) throw invalid('/reportsToAgentId', 'reportsToAgentId must be an agent of this squad')
    return {
      name,
      role,
      adapterType,
      ...(input.reason != null ? { reason: input.reason } : {}),
      ...(input.title != null ? { title: input.title } : {}),
      ...(input.reportsToAgentId != null ? { reportsToAgentId: input.reportsToAgentId } : {}),
      ...(input.prompt != null ? { prompt: input.prompt } : {}),
      ...(input.desiredSkills ? { desiredSkills: input.desiredSkills } : {}),
      ...(input.adapterConfig ? { adapterConfig: input.adapterConfig } : {}),
    }
  }
}

function normaliseBoardPayload(p: BoardPayload): BoardPayload {
  const title = p.title.trim()
  if (!title) throw invalid('/payload/title', 'title must not be blank')
  const summary = p.summary.trim()
  if (!summary) throw invalid('/payload/summary', 'summary must not be blank')
  return {
    title,
    summary,
    ...(p.recommendedAction != null ? { recommendedAction: p.recommendedAction } : {}),
    ...(p.risks ? { risks: p.risks } : {}),
  }
}

function toCreateAgent(h: HireRequest): CreateAgentInput {
  return {
    name: h.name,
    role: h.role,
    adapterType: h.adapterType!,
    ...(h.title != null ? { title: h.title } : {}),
    ...(h.reportsToAgentId != null ? { reportsToAgentId: h.reportsToAgentId } : {}),
    ...(h.prompt != null ? { prompt: h.prompt } : {}),
    ...(h.desiredSkills ? { desiredSkills: h.desiredSkills } : {}),
    ...(h.adapterConfig ? { adapterConfig: h.adapterConfig } : {}),
  }
}
