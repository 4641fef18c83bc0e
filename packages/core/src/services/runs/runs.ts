import { SlawError, invalid, notFound } from '../../errors.js'
import type { AdapterEnvironmentReport, AdapterUsage } from '../../contracts/agent-adapter.js'
import type { HeartbeatRun, HeartbeatRunLiveness, HeartbeatRunStatus, IssueSummary } from '../../records.js'
import { assertSquadVisible, isPrivileged, requireOperator, type Actor } from '../foundation/actor.js'
import type { AgentService } from '../org/agents.js'
import type { ServiceContext } from '../foundation/context.js'
import { isUuid } from '../foundation/ids.js'
import type { IssueService } from '../work/issues.js'
import type { RunEngine } from './run-engine.js'
import type { SquadService } from '../org/squads.js'
import { queueWake } from './wakes.js'
import { inSquad } from '../foundation/same-squad.js'

const finishedStatuses = new Set<HeartbeatRunStatus>(['succeeded', 'failed', 'cancelled', 'timed_out'])

export interface RunListInput {
  agentId?: string
  statuses?: HeartbeatRunStatus[]
  cursor?: string
  limit?: number
}

export interface RunReportInput {
  liveness?: HeartbeatRunLiveness
  usage?: AdapterUsage
  summary?: string
  final?: boolean
  /** With `final: true`: the run failed, and this says why. */
  error?: string
}

export interface AgentRunState {
  agentId: string
  status: string
  pauseReason: string | null
  state: Record<string, unknown>
  updatedAt: Date
  runningRuns: HeartbeatRun[]
  queuedRuns: number
  lastRun: HeartbeatRun | null
}

/**
 * Heartbeat runs through the API: manual wakes, lists and records, cancel, and the report an agent
 * sends with its run token. The engine (run-engine.ts) carries runs from queued to finished.
 */
export class RunService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
    private readonly agents: AgentService,
    private readonly issues: IssueService,
    readonly engine: RunEngine,
  ) {}

  /**
   * POST /api/agents/{id}/wake: the gates answer at once (409 agent_not_active, squad_archived,
   * project_paused, budget_exhausted, tower_limit_reached); otherwise a run is queued (or the
   * queued one for this agent and issue absorbs the wake) and returned.
   */
  async wake(actor: Actor, agentId: string, input: { reason?: string; issueId?: string | null }): Promise<HeartbeatRun> {
    const run = await this.ctx.storage.transaction(async (tx) => {
      const agent = await this.agents.visible(tx, actor, agentId)
      // The Operator, or an agent of the same squad (a manager waking a report).
      if (!isPrivileged(actor) && !(actor.type === 'agent' && actor.squadId === agent.squadId)) throw new SlawError('forbidden')
      const squad = await this.squads.visible(tx, actor, agent.squadId)
      let issue = null
      if (input.issueId) {
        const found = isUuid(input.issueId) ? await tx.issues.get(input.issueId) : undefined
        issue = inSquad(found, agent.squadId, '/issueId', "issueId must be an issue of the agent's squad")
      }
      const blocked = await this.engine.gate(tx, agent, squad, issue)
      if (blocked) throw blocked
      const reason = input.reason?.trim() || 'manual'
      // A manual wake names its reason freely; the built-in causes use the WakeReason names.
      const queued = await queueWake(tx, { squadId: agent.squadId, agentId: agent.id, issueId: issue?.id ?? null, reason: reason as 'manual' })
      return queued.run
    })
    this.ctx.kickJobs()
    return run
  }

  /**
   * Resolves with the run once it has finished (succeeded, failed, cancelled or timed out), at once
   * if it has. A run this node carries is seen the moment it ends; one carried by another node
   * within `recheckMs` (default 1 s). Rejects with a `TimeoutError` after `timeoutMs` (default
   * 10 minutes) and with the signal's reason when `signal` aborts.
   */
  async waitFor(actor: Actor, runId: string, options: { timeoutMs?: number; signal?: AbortSignal; recheckMs?: number } = {}): Promise<HeartbeatRun> {
    let finished: HeartbeatRun | undefined
    let wake: (() => void) | undefined
    // Listen before the first read, so a run that ends in between is not missed.
    const off = this.engine.onRunFinished((run) => {
      if (run.id === runId.toLowerCase()) {
        finished = run
        wake?.()
      }
    })
    try {
      const first = await this.get(actor, runId)
      if (finished || finishedStatuses.has(first.status)) return finished ?? first
      const deadline = Date.now() + (options.timeoutMs ?? 600_000)
      for (;;) {
        options.signal?.throwIfAborted()
        if (Date.now() >= deadline) throw Object.assign(new Error(`run ${first.id} did not finish within ${options.timeoutMs ?? 600_000} ms`), { name: 'TimeoutError' })
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(options.recheckMs ?? 1_000, Math.max(0, deadline - Date.now())))
          const done = () => {
            clearTimeout(timer)
            options.signal?.removeEventListener('abort', done)
            resolve()
          }
          wake = done
          options.signal?.addEventListener('abort', done, { once: true })
        })
        if (finished) return finished
        const now = await this.ctx.storage.heartbeatRuns.get(first.id)
        if (now && finishedStatuses.has(now.status)) return now
      }
    } finally {
      off()
    }
  }

  async get(actor: Actor, runId: string): Promise<HeartbeatRun> {
    if (!isUuid(runId)) throw notFound('Run')
    const run = await this.ctx.storage.heartbeatRuns.get(runId.toLowerCase())
    if (!run) throw notFound('Run')
    assertSquadVisible(actor, run.squadId, 'Run')
    return run
  }

  async list(actor: Actor, squadId: string, input: RunListInput): Promise<{ runs: HeartbeatRun[]; nextCursor: string | null }> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    if (input.agentId !== undefined && !isUuid(input.agentId)) throw invalid('/agentId', 'agentId must be a UUID')
    if (input.cursor !== undefined && !isUuid(input.cursor)) throw invalid('/cursor', 'cursor must be a value of nextCursor')
    const limit = Math.min(Math.max(input.limit ?? 50, 1), 200)
    const runs = await this.ctx.storage.heartbeatRuns.list({
      squadId,
      ...(input.agentId ? { agentId: input.agentId } : {}),
      ...(input.statuses?.length ? { statuses: input.statuses } : {}),
      ...(input.cursor ? { beforeId: input.cursor } : {}),
      limit: limit + 1,
    })
    const page = runs.slice(0, limit)
    return { runs: page, nextCursor: runs.length > limit ? page[page.length - 1]!.id : null }
  }

  async forIssue(actor: Actor, idOrIdentifier: string, limit = 100): Promise<HeartbeatRun[]> {
    const issue = await this.issues.visible(this.ctx.storage, actor, idOrIdentifier, { identifier: true })
    return this.ctx.storage.heartbeatRuns.listForIssue(issue.id, Math.min(Math.max(limit, 1), 500))
  }

  /** Issues the run touched; an unknown run (or another squad's) is an empty list (docs/heartbeats.md). */
  async touchedIssues(actor: Actor, runId: string): Promise<IssueSummary[]> {
    if (!isUuid(runId)) return []
    const run = await this.ctx.storage.heartbeatRuns.get(runId.toLowerCase())
    if (!run || (actor.type === 'agent' && actor.squadId !== run.squadId)) return []
    return this.ctx.storage.heartbeatRuns.touchedIssues(run.id)
  }

  async cancel(actor: Actor, runId: string): Promise<HeartbeatRun> {
    const run = await this.get(actor, runId)
    requireOperator(actor)
    if (run.status !== 'queued' && run.status !== 'running') throw new SlawError('invalid_state', `The run is already ${run.status}.`)
    const ended = await this.engine.finish(run.id, ['queued', 'running'], { status: 'cancelled', error: 'Cancelled by an Operator.', finishedAt: this.ctx.now() })
    return ended ?? (await this.get(actor, runId))
  }

  /**
   * The agent's report, sent with its run token: liveness, summary, usage (a cost event of the run)
   * and, with `final: true`, the end of the run (`succeeded`, or `failed` when `error` is given).
   */
  async report(actor: Actor, runId: string, input: RunReportInput): Promise<HeartbeatRun> {
    const run = await this.get(actor, runId)
    if (actor.type !== 'agent' || actor.runId !== run.id || actor.agentId !== run.agentId || !actor.keyId.startsWith('run:')) {
      throw new SlawError('forbidden', 'A run is reported with its own run token (SVC_API_KEY).')
    }
    if (run.status !== 'running') throw new SlawError('invalid_state', `The run is ${run.status}; it takes no more reports.`)
    if (input.final) {
      const ended = await this.ctx.storage.transaction(async (tx) => {
        let current = run
        if (input.usage) current = await this.engine.recordUsage(tx, current, input.usage)
        if (input.summary !== undefined) await tx.heartbeatRuns.report(run.id, { summary: input.summary })
        return this.engine.finish(run.id, ['running'], {
          status: input.error ? 'failed' : 'succeeded',
          finishedAt: this.ctx.now(),
          ...(input.liveness ? { liveness: input.liveness } : {}),
          error: input.error ?? null,
        })
      })
      return ended ?? (await this.get(actor, runId))
    }
    return this.ctx.storage.transaction(async (tx) => {
      if (input.usage) await this.engine.recordUsage(tx, run, input.usage)
      const patch: { liveness?: HeartbeatRunLiveness; summary?: string } = {}
      if (input.liveness) patch.liveness = input.liveness
      if (input.summary !== undefined) patch.summary = input.summary
      return (await tx.heartbeatRuns.report(run.id, patch))!
    })
  }

  /**
   * POST /api/agents/{id}/check-environment (Operator only): asks the agent's adapter whether it
   * could run here (command found, version, logged in). 422 for an adapter without such a check.
   */
  async checkEnvironment(actor: Actor, agentId: string): Promise<{ adapterType: string } & AdapterEnvironmentReport> {
    requireOperator(actor)
    const agent = await this.agents.get(actor, agentId)
    const adapter = this.ctx.adapters.get(agent.adapterType)
    if (!adapter) throw new SlawError('invalid_state', `No adapter is registered for adapterType "${agent.adapterType}".`)
    if (!adapter.checkEnvironment) throw new SlawError('invalid_state', `The ${agent.adapterType} adapter has no environment check.`)
    const report = await adapter.checkEnvironment(agent.adapterConfig)
    return { adapterType: agent.adapterType, ok: report.ok, checks: report.checks }
  }

  /** GET /api/agents/{id}/runtime-state: the agent's session state and its runs right now. */
  async runtimeState(actor: Actor, agentId: string): Promise<AgentRunState> {
    const base = await this.agents.runtimeState(actor, agentId)
    const runs = await this.ctx.storage.heartbeatRuns.agentState(agentId)
    return { ...base, runningRuns: runs.running, queuedRuns: runs.queued, lastRun: runs.last }
  }

  /**
   * POST .../runtime-state/reset-session: clears the session state and ends the continuation chain
   * (queued continuation runs are cancelled), so the next wake starts fresh.
   */
  async resetSession(actor: Actor, agentId: string): Promise<void> {
    await this.agents.resetSession(actor, agentId)
    const queued = await this.ctx.storage.heartbeatRuns.list({ squadId: (await this.agents.get(actor, agentId)).squadId, agentId, statuses: ['queued'], limit: 200 })
    for (const run of queued.filter((r) => r.reason === 'continuation')) {
      await this.engine.finish(run.id, ['queued'], { status: 'cancelled', error: "The agent's session was reset.", finishedAt: this.ctx.now() })
    }
  }
}
