import type { AdapterOutputChunk, AdapterSession, AdapterUsage, AdapterWakeContext, AdapterWakeResult, AgentAdapter } from '../../contracts/agent-adapter.js'
import type { RunFinish, RunSlotCaps, StorageSession } from '../../contracts/storage.js'
import { SlawError, isSlawError } from '../../errors.js'
import type { Agent, HeartbeatRun, HeartbeatRunStatus, Issue, Job, Squad } from '../../records.js'
import { systemActor, type Actor } from '../foundation/actor.js'
import type { EnvBinding } from '../secrets/env-bindings.js'
import type { ServiceContext } from '../foundation/context.js'
import type { CostService } from '../money/costs.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import type { IssueService } from '../work/issues.js'
import { JobDeferred, type JobControl } from './jobs.js'
import { recordActivity } from '../audit/activity-recorder.js'
import { runEventFact } from './run-facts.js'
import { RunTokens } from './run-tokens.js'
import { heartbeatRunJob, queueWake } from './wakes.js'
import { savedSession, settleSession, wakeContext } from './run-sessions.js'
import { usageDelta, upstreamRetryAt } from './run-usage.js'
import { composeAgentEnv, type EnvPart, type RefusedBinding } from './agent-env.js'
import type { RoutineRunEnv } from '../../contracts/routines.js'
import { scrubSecretValues, streamScrubber } from '../secrets/scrub.js'

/** Run engine settings (createInstance `runs`, env SVC_MAX_CONCURRENT_RUNS…; docs/heartbeats.md). */
export interface RunOptions {
  /** Runs of one agent at once, across every node. Default 1. */
  maxConcurrentRunsPerAgent?: number
  /** Runs of one squad at once, across every node. Default: no cap. */
  maxConcurrentRunsPerSquad?: number | null
  /** Runs of the whole instance at once, across every node. Default: no cap. */
  maxConcurrentRuns?: number | null
  /** Liveness continuations in a row before the engine stops re-waking. Default 3. */
  maxContinuations?: number
  /** Finished runs are deleted after this many days. Default 90. */
  retentionDays?: number
  /** A finished run's output tail is dropped after this many days. Default 14. */
  outputRetentionDays?: number
  /** Finished jobs are deleted after this many days. Default 7. */
  jobRetentionDays?: number
  /** How often the retention job runs. Default 1 hour. */
  retentionIntervalMs?: number
  /**
   * How many times a run that failed `transient_upstream` (a rate limit, an overload) is retried,
   * at the time the upstream named or with backoff. Default 3; 0 turns retries off.
   */
  maxUpstreamRetries?: number
  /** First retry delay when the upstream named no time; doubles each retry, at most 1 hour. Default 60 s. */
  upstreamRetryBaseMs?: number
}

/**
 * What the engine tells `/metrics` (http/metrics.ts) on this node: a wake or a run start a gate
 * refused, a run start postponed by a concurrency cap, and a finished run with its agent's adapter
 * type. Called synchronously; must not throw.
 */
export interface RunMetricsSink {
  wakeRefused(error: SlawError, agent: Agent): void
  runDeferred(reason: 'concurrency_cap'): void
  runFinished(run: HeartbeatRun, adapterType: string): void
}

/** Live output of a run, as the adapter reads it (stdout and stderr chunks). */
export interface RunOutputEvent extends AdapterOutputChunk {
  runId: string
  agentId: string
  squadId: string
}

const defaultTimeoutSec = 600
const defaultGraceSec = 15
/** A run over a cap looks again after this long, or as soon as any run ends. */
const overCapRetryMs = 30_000
export const runDeadlineJob = 'heartbeat_deadline'
export const runRetentionJob = 'heartbeat_retention'

/** An agent's run timing from its adapterConfig (timeoutSec 600, graceSec 15 by default; docs/adapters.md). */
function runTiming(config: Record<string, unknown>): { timeoutSec: number; graceSec: number } {
  const pick = (v: unknown, d: number) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : d)
  return { timeoutSec: pick(config.timeoutSec, defaultTimeoutSec), graceSec: pick(config.graceSec, defaultGraceSec) }
}

/** The actor of an agent acting inside its run (activity and costs carry the run id). */
function runActor(run: Pick<HeartbeatRun, 'id' | 'agentId' | 'squadId'>): Actor {
  return { type: 'agent', agentId: run.agentId, squadId: run.squadId, keyId: `run:${run.id}`, runId: run.id }
}

const engineActor = systemActor('run-engine')

/**
 * Carries queued runs to adapters: gates, caps, the run token, the wake environment, the adapter's
 * outcome, and everything a finished run writes (activity, run_event fact, cost, continuation) in
 * one transaction. Each step is a job on the durable queue, so a node that dies loses nothing.
 */
export class RunEngine {
  private readonly local = new Map<string, AbortController>()
  readonly tokens: RunTokens
  private readonly caps: RunSlotCaps
  readonly maxContinuations: number
  /**
   * SVC_API_URL given to agents: createInstance `publicUrl`, else the address the instance listens
   * on. Unset while nothing serves the API (a host that never calls `listen()`): agents then get no
   * SVC_API_URL rather than a default address that another program may answer.
   */
  apiUrl: string | undefined
  private warnedNoApiUrl = false
  private readonly outputListeners = new Set<(event: RunOutputEvent) => void>()
  private readonly finishListeners = new Set<(run: HeartbeatRun) => void>()
  /** Set by `/metrics` (createInstance); unset, nothing is counted. */
  metrics: RunMetricsSink | undefined

  /**
   * Subscribes to every run this node finishes (succeeded, failed, cancelled, timed out). Returns
   * the unsubscribe function. A listener that throws is ignored.
   */
  onRunFinished(listener: (run: HeartbeatRun) => void): () => void {
    this.finishListeners.add(listener)
    return () => this.finishListeners.delete(listener)
  }

  /**
   * Subscribes to the live output of every run this node executes (adapters that call `onOutput`).
   * Returns the unsubscribe function. Listeners run synchronously in the adapter's data handler:
   * keep them quick; one that throws is ignored.
   */
  onRunOutput(listener: (event: RunOutputEvent) => void): () => void {
    this.outputListeners.add(listener)
    return () => this.outputListeners.delete(listener)
  }

  constructor(
    private readonly ctx: ServiceContext,
    private readonly issues: IssueService,
    private readonly costs: CostService,
    readonly options: RunOptions,
    private readonly node: { nodeId: string; watchMs: number },
  ) {
    this.tokens = new RunTokens(ctx.masterKey)
    this.caps = {
      perAgent: Math.max(1, options.maxConcurrentRunsPerAgent ?? 1),
      perSquad: options.maxConcurrentRunsPerSquad ?? null,
      perInstance: options.maxConcurrentRuns ?? null,
    }
    this.maxContinuations = options.maxContinuations ?? 3
  }

  /**
   * Why the agent may not be woken now, or null: agent not active, squad archived, the tower gate
   * (`enforce` mode, not enrolled), and every checkout guard (project paused, budget hard stops incl. token ceilings, tower hard limit).
   */
  async gate(tx: StorageSession, agent: Agent, squad: Squad, issue: Issue | null): Promise<SlawError | null> {
    const refused = await this.refusal(tx, agent, squad, issue)
    if (refused) this.metrics?.wakeRefused(refused, agent)
    return refused
  }

  private async refusal(tx: StorageSession, agent: Agent, squad: Squad, issue: Issue | null): Promise<SlawError | null> {
    if (agent.status === 'terminated') return new SlawError('agent_not_active', 'The agent is terminated; it is never woken.')
    if (agent.status === 'paused') return new SlawError('agent_not_active', `The agent is paused${agent.pauseReason ? ` (${agent.pauseReason})` : ''}.`)
    if (squad.status === 'archived') return new SlawError('squad_archived')
    // The tower gate holds for runs as for requests: a gated instance wakes no agent.
    const towerGate = this.ctx.towerGate?.()
    if (towerGate) return new SlawError('instance_not_enrolled', towerGate.message)
    try {
      await this.issues.checkGuards(tx, { issue, agent, squad })
    } catch (err) {
      if (isSlawError(err)) return err
      throw err
    }
    return null
  }

  /** Aborts the adapter call of a run running on this node (cancel). */
  abortLocal(runId: string, reason: string): void {
    this.local.get(runId)?.abort(new Error(reason))
  }

  // The heartbeat_run job ----------------------------------------------------------------------

  async runJob(job: Job, control: JobControl): Promise<Record<string, unknown> | null> {
    const s = this.ctx.storage
    const runId = String(job.payload.runId ?? '')
    const run = isUuid(runId) ? await s.heartbeatRuns.get(runId) : undefined
    if (!run) return { skipped: 'run not found' }
    if (run.status === 'running') {
      // Our job was claimed again: the node that started the run stopped renewing its lease.
      await this.finish(run.id, ['running'], { status: 'timed_out', error: 'node_lost', finishedAt: this.ctx.now() })
      return { ended: 'node_lost' }
    }
    if (run.status !== 'queued') return { skipped: run.status }

    const prepared = await s.transaction(async (tx) => {
      const [agent, squad, issue] = await Promise.all([tx.agents.get(run.agentId), tx.squads.get(run.squadId), run.issueId ? tx.issues.get(run.issueId) : undefined])
      if (!agent || !squad) return { kind: 'gone' as const }
      const blocked = await this.gate(tx, agent, squad, issue ?? null)
      if (blocked) return { kind: 'blocked' as const, error: blocked }
      const adapter = this.ctx.adapters.get(agent.adapterType)
      if (!adapter) return { kind: 'no_adapter' as const, agent }
      const timing = runTiming(agent.adapterConfig)
      const startedAt = this.ctx.now()
      const deadlineAt = new Date(startedAt.getTime() + (timing.timeoutSec + timing.graceSec) * 1000)
      // A CLI session saved for this agent, adapter type, cwd and model is resumed, unless another
      // running run of the agent holds it (start decides under the slot lock).
      const saved = savedSession(agent)
      const outcome = await tx.heartbeatRuns.start(run.id, { nodeId: this.node.nodeId, startedAt, deadlineAt, sessionId: saved?.id ?? null }, this.caps)
      if (outcome === 'over_cap') return { kind: 'over_cap' as const }
      if (outcome === 'not_queued') return { kind: 'gone' as const }
      const started = (await tx.heartbeatRuns.get(run.id))!
      const session = saved && started.sessionId === saved.id ? saved : null
      const context = await wakeContext(tx, started, agent, issue ?? null)
      // The deadline is a job too: an accepted http run, or a hung adapter, still ends on time.
      await tx.jobs.enqueue({ id: uuidv7(), kind: runDeadlineJob, squadId: run.squadId, payload: { runId: run.id }, runAt: deadlineAt, dedupeKey: run.id, maxAttempts: 10 })
      await recordActivity(tx, engineActor, {
        squadId: run.squadId,
        action: 'run.started',
        entityType: 'heartbeat_run',
        entityId: run.id,
        agentId: run.agentId,
        runId: run.id,
        details: { reason: run.reason, ...(run.issueId ? { issueId: run.issueId } : {}) },
        outbox: [runEventFact(started, startedAt)],
      })
      return { kind: 'started' as const, run: started, agent, adapter, timing, session, context }
    })

    switch (prepared.kind) {
      case 'gone':
        return { skipped: 'run, agent or squad gone' }
      case 'blocked':
        await this.finish(run.id, ['queued'], { status: 'cancelled', error: `${prepared.error.code}: ${prepared.error.message}`, finishedAt: this.ctx.now() })
        return { cancelled: prepared.error.code }
      case 'no_adapter':
        await this.finish(run.id, ['queued'], { status: 'failed', error: `No adapter is registered for adapterType "${prepared.agent.adapterType}".`, finishedAt: this.ctx.now() })
        return { failed: 'no_adapter' }
      case 'over_cap':
        this.metrics?.runDeferred('concurrency_cap')
        throw new JobDeferred(new Date(this.ctx.now().getTime() + overCapRetryMs))
      case 'started':
        await this.execute(prepared.run, prepared.agent, prepared.adapter, prepared.timing, control, prepared.session, prepared.context)
        return { runId: run.id }
    }
  }

  private async execute(
    run: HeartbeatRun,
    agent: Agent,
    adapter: AgentAdapter,
    timing: { timeoutSec: number; graceSec: number },
    control: JobControl,
    session: AdapterSession | null = null,
    context: AdapterWakeContext = {},
  ): Promise<void> {
    const controller = new AbortController()
    this.local.set(run.id, controller)
    const onNodeAbort = () => controller.abort(control.signal.reason)
    control.signal.addEventListener('abort', onNodeAbort)
    // Across nodes: a cancel (or deadline) written by another node aborts the adapter here.
    const watch = setInterval(() => {
      this.ctx.storage.heartbeatRuns
        .get(run.id)
        .then((current) => {
          if (current && current.status !== 'running') controller.abort(new Error(`the run is ${current.status}`))
        })
        .catch(() => undefined)
    }, this.node.watchMs)
    watch.unref()
    try {
      let env: Record<string, string>
      let signingSecret: string | undefined
      // Values bound as secrets (and the run token): scrubbed from the live output and from what the run stores.
      let secrets: string[]
      try {
        const token = await this.tokens.mint({ runId: run.id, agentId: run.agentId, squadId: run.squadId }, run.startedAt ?? this.ctx.now(), timing.timeoutSec + timing.graceSec + RunTokens.slackSec)
        env = await this.buildEnv(run, agent, token)
        signingSecret = await this.signingSecret(agent)
        secrets = await this.boundSecretValues(run, agent, env)
      } catch (err) {
        await this.finish(run.id, ['running'], { status: 'failed', error: err instanceof Error ? err.message : String(err), finishedAt: this.ctx.now() })
        return
      }
      // One scrubber per stream: a value cut across two chunks is still caught.
      const scrubbers = { stdout: streamScrubber(secrets), stderr: streamScrubber(secrets) }
      const emit = (stream: 'stdout' | 'stderr', text: string) => {
        if (!text) return
        const event: RunOutputEvent = { runId: run.id, agentId: run.agentId, squadId: run.squadId, stream, text }
        for (const listener of this.outputListeners) {
          try {
            listener(event)
          } catch {
            // A listener's bug must not break the run.
          }
        }
      }
      let result: AdapterWakeResult
      try {
        result = await adapter.wake({
          runId: run.id,
          agentId: run.agentId,
          squadId: run.squadId,
          issueId: run.issueId,
          reason: run.reason,
          env,
          config: agent.adapterConfig,
          timeoutMs: timing.timeoutSec * 1000,
          graceMs: timing.graceSec * 1000,
          ...(signingSecret ? { signingSecret } : {}),
          signal: controller.signal,
          session,
          context,
          onOutput: (chunk) => {
            if (!this.outputListeners.size) return
            emit(chunk.stream, scrubbers[chunk.stream].push(chunk.text))
          },
        })
      } catch (err) {
        result = { status: 'failed', error: `The ${adapter.type} adapter failed: ${err instanceof Error ? err.message : String(err)}` }
      }
      // What was held back in case it began a secret value: the stream has ended, it did not.
      for (const stream of ['stdout', 'stderr'] as const) emit(stream, scrubbers[stream].flush())
      if (result.status === 'accepted') {
        // The agent finishes the run itself (report final: true) or the deadline job does.
        if (result.httpStatus !== undefined || result.liveness) await this.ctx.storage.heartbeatRuns.report(run.id, result.liveness ? { liveness: result.liveness } : {})
        return
      }
      const status: RunFinish['status'] = result.status
      // What the run stores for the Operator never holds a value bound as a secret (nor the run token).
      const scrub = (text: string) => scrubSecretValues(text, secrets)
      let error = result.error !== undefined && result.error !== null ? scrub(result.error) : null
      if (status === 'cancelled' && control.signal.aborted && !error) error = 'The node running the run shut down.'
      await this.finish(
        run.id,
        ['running'],
        {
          status,
          finishedAt: this.ctx.now(),
          ...(result.liveness ? { liveness: result.liveness } : {}),
          exitCode: result.exitCode ?? null,
          httpStatus: result.httpStatus ?? null,
          error: status === 'succeeded' ? null : (error ?? `The run ended ${status}.`),
          outputTail: result.output !== undefined ? scrub(result.output).slice(-65_536) : null,
          ...(result.summary !== undefined ? { summary: scrub(result.summary) } : {}),
          errorCode: status === 'succeeded' ? null : (result.errorCode ?? null),
          retryNotBefore: status === 'succeeded' ? null : (result.retryNotBefore ?? null),
          // The session the run ended in: a new one when it succeeded, none when the CLI did not find it.
          ...(result.session !== undefined ? { sessionId: result.session && status === 'succeeded' ? result.session.id : null } : {}),
        },
        result.usage,
        { session: result.session, resumedId: session?.id ?? null },
      )
    } finally {
      clearInterval(watch)
      control.signal.removeEventListener('abort', onNodeAbort)
      this.local.delete(run.id)
    }
  }

  /** The agent's webhook signing secret, decrypted for the adapter, when it has one. */
  private async signingSecret(agent: Agent): Promise<string | undefined> {
    const envelope = await this.ctx.storage.agents.webhookSecret(agent.id)
    return envelope ? this.ctx.masterKey.decrypt(envelope, `webhook-secret:${agent.id}`) : undefined
  }

  /**
   * The wake environment: every source goes through the one rule of agent-env.ts, which knows who
   * wrote each part — the agent's adapterConfig.env (an Operator's, for this agent), the routine's
   * env for an issue a routine run created (an Operator's only for the assignee an Operator chose;
   * an agent's never loading code nor overriding), then the wake variables (which nothing
   * overrides). Nothing of the server's own environment. Refused bindings are left out and logged
   * by name. A secret that does not resolve fails the run with a sentence naming the binding,
   * never a value.
   */
  async buildEnv(run: HeartbeatRun, agent: Agent, token: string): Promise<Record<string, string>> {
    if (this.apiUrl === undefined && !this.warnedNoApiUrl) {
      this.warnedNoApiUrl = true
      this.ctx.log.warn('agents are woken without SVC_API_URL: this instance does not listen (call listen()) and has no publicUrl, so an agent cannot call the API back')
    }
    const parts: EnvPart[] = [{ source: 'wake', bindings: wakeVariables(run, token, this.apiUrl), path: 'wake' }]
    const agentEnv = agent.adapterConfig.env
    if (agentEnv && typeof agentEnv === 'object') parts.push({ source: 'agent_config', bindings: agentEnv as Record<string, EnvBinding>, path: 'adapterConfig.env' })
    const refused: RefusedBinding[] = []
    if (run.routineRunId && this.ctx.storage.routineEnv) {
      const routine = await this.ctx.storage.routineEnv.runEnv(run.routineRunId)
      if (routine && Object.keys(routine.env).length) {
        if (routine.envWrittenBy === 'agent') parts.push({ source: 'routine_agent', bindings: routine.env, path: 'routine.env' })
        else if (operatorChoseAssignee(routine, run.agentId)) parts.push({ source: 'routine_operator', bindings: routine.env, path: 'routine.env' })
        // An Operator's env (and its secrets) goes only to the assignee an Operator chose.
        else for (const name of Object.keys(routine.env)) refused.push({ name, source: 'routine_operator', reason: 'an Operator wrote it for another assignee' })
      }
    }
    const plan = composeAgentEnv(parts)
    refused.push(...plan.refused)
    if (refused.length) this.ctx.log.warn({ runId: run.id, agentId: run.agentId, refused }, 'env bindings refused for the wake environment')
    const env: Record<string, string> = {}
    for (const p of plan.planned) {
      const consumer = p.source === 'agent_config' ? { type: 'agent' as const, id: agent.id } : { type: 'routine' as const, id: run.routineRunId ?? run.id }
      env[p.name] = p.source === 'wake' ? (p.binding as string) : await this.resolveBinding(run, p.binding, consumer, p.configPath)
    }
    return env
  }

  /**
   * The values of the wake environment bound as `secret_ref` (in the agent's config or the
   * routine's env) and the run token: what `finish` scrubs from the output tail, error and summary.
   */
  private async boundSecretValues(run: HeartbeatRun, agent: Agent, env: Record<string, string>): Promise<string[]> {
    const names = new Set<string>(['SVC_API_KEY'])
    const addSecretRefs = (bindings: unknown) => {
      if (!bindings || typeof bindings !== 'object') return
      for (const [name, b] of Object.entries(bindings as Record<string, unknown>)) {
        if (b && typeof b === 'object' && (b as { type?: unknown }).type === 'secret_ref') names.add(name)
      }
    }
    addSecretRefs(agent.adapterConfig.env)
    if (run.routineRunId && this.ctx.storage.routineEnv) addSecretRefs((await this.ctx.storage.routineEnv.runEnv(run.routineRunId).catch(() => null))?.env)
    return [...names].map((n) => env[n]).filter((v): v is string => typeof v === 'string')
  }

  private async resolveBinding(run: HeartbeatRun, binding: EnvBinding, consumer: { type: 'agent' | 'routine'; id: string }, configPath: string): Promise<string> {
    if (typeof binding === 'string') return binding
    if (binding && binding.type === 'plain') return binding.value
    if (binding && binding.type === 'secret_ref') {
      try {
        return await this.ctx.secrets.resolve({
          squadId: run.squadId,
          secretId: binding.secretId,
          version: binding.version,
          consumer,
          configPath,
          actor: engineActor,
          heartbeatRunId: run.id,
          issueId: run.issueId,
        })
      } catch (err) {
        throw new Error(`The secret bound to ${configPath} could not be resolved: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
    throw new Error(`The binding ${configPath} is not a string, plain or secret_ref binding.`)
  }

  // Ending runs --------------------------------------------------------------------------------

  /**
   * Ends a run whose status is one of `from`, writing in one transaction: the final status, its
   * usage as a cost event of the run, activity and the run_event fact, the wake-up of runs waiting
   * for a slot, and a liveness continuation when one is due. Returns undefined when the run had
   * already left `from` (another node or request ended it first).
   */
  async finish(
    runId: string,
    from: HeartbeatRunStatus[],
    end: RunFinish,
    usage?: AdapterUsage | AdapterUsage[],
    after?: { session?: AdapterSession | null; resumedId: string | null },
  ): Promise<HeartbeatRun | undefined> {
    let adapterType = 'unknown'
    const ended = await this.ctx.storage.transaction(async (tx) => {
      let run = await tx.heartbeatRuns.finish(runId, from, end)
      if (!run) return undefined
      // For /metrics: finished runs by adapter type (one key read, only while metrics are on).
      if (this.metrics) adapterType = (await tx.agents.get(run.agentId))?.adapterType ?? 'unknown'
      for (const u of Array.isArray(usage) ? usage : usage ? [usage] : []) run = await this.recordUsage(tx, run, u)
      if (after) await settleSession(tx, run, after.session, after.resumedId, end.finishedAt)
      await recordActivity(tx, engineActor, {
        squadId: run.squadId,
        action: `run.${run.status}`,
        entityType: 'heartbeat_run',
        entityId: run.id,
        agentId: run.agentId,
        runId: run.id,
        details: {
          reason: run.reason,
          ...(run.liveness ? { liveness: run.liveness } : {}),
          ...(run.exitCode !== null ? { exitCode: run.exitCode } : {}),
          ...(run.errorCode ? { errorCode: run.errorCode } : {}),
        },
        outbox: [runEventFact(run, end.finishedAt)],
      })
      // A slot may have freed: runs waiting over a cap are due now.
      await tx.jobs.promote(heartbeatRunJob, end.finishedAt)
      await this.maybeContinue(tx, run)
      await this.maybeRetry(tx, run, end.finishedAt)
      return run
    })
    if (ended) {
      this.abortLocal(runId, `the run is ${ended.status}`)
      this.ctx.kickJobs()
      this.metrics?.runFinished(ended, adapterType)
      for (const listener of this.finishListeners) {
        try {
          listener(ended)
        } catch {
          // a listener's failure is its own
        }
      }
    }
    return ended
  }

  /**
   * Records usage as a cost event of the run (the cost service's rules, budgets and facts) and adds
   * it to the run's totals. Unpriced usage is a cost event of 0 cents marked `unpriced`, and the run's
   * `usage.costCents` stays null while nothing of it was priced: an unknown cost is never shown as 0.
   */
  async recordUsage(tx: StorageSession, run: HeartbeatRun, usage: AdapterUsage): Promise<HeartbeatRun> {
    const d = usageDelta(usage)
    await this.costs.record(runActor(run), run.squadId, {
      agentId: run.agentId,
      model: typeof usage.model === 'string' && usage.model.trim() ? usage.model : 'unknown',
      inputTokens: d.inputTokens,
      outputTokens: d.outputTokens,
      costCents: d.costCents,
      cachedInputTokens: d.cachedInputTokens,
      cacheWriteTokens: d.cacheWriteTokens,
      costStatus: d.costStatus,
      issueId: run.issueId,
      ...(d.provider ? { provider: d.provider } : {}),
      ...(d.biller ? { biller: d.biller } : {}),
      ...(d.billingType ? { billingType: d.billingType } : {}),
    })
    await tx.heartbeatRuns.addUsage(run.id, d)
    return (await tx.heartbeatRuns.get(run.id)) ?? run
  }

  /**
   * A run that failed `transient_upstream` (rate limit, overload, usage limit) is woken again at
   * the time the upstream named, or after a backoff, at most `maxUpstreamRetries` times in a row.
   */
  private async maybeRetry(tx: StorageSession, run: HeartbeatRun, now: Date): Promise<void> {
    if (run.status !== 'failed' || run.errorCode !== 'transient_upstream') return
    const max = this.options.maxUpstreamRetries ?? 3
    if (run.retryAttempt >= max) return
    const agent = await tx.agents.get(run.agentId)
    if (!agent || agent.status === 'terminated' || agent.status === 'paused') return
    const runAt = upstreamRetryAt(run, now, this.options.upstreamRetryBaseMs ?? 60_000)
    await queueWake(tx, {
      squadId: run.squadId,
      agentId: run.agentId,
      issueId: run.issueId,
      reason: run.reason as 'manual',
      approvalId: run.approvalId,
      commentId: run.commentId,
      routineRunId: run.routineRunId,
      continuationDepth: run.continuationDepth,
      retryAttempt: run.retryAttempt + 1,
      runAt,
    })
  }

  /**
   * Liveness continuations (spec, States): only `plan_only` and `empty_response`, at most
   * `maxContinuations` in a row, only while the agent is active and every gate (budgets, project,
   * tower limit) lets it work.
   */
  private async maybeContinue(tx: StorageSession, run: HeartbeatRun): Promise<void> {
    if (run.liveness !== 'plan_only' && run.liveness !== 'empty_response') return
    if (run.status === 'cancelled') return
    if (run.continuationDepth >= this.maxContinuations) return
    const [agent, squad, issue] = await Promise.all([tx.agents.get(run.agentId), tx.squads.get(run.squadId), run.issueId ? tx.issues.get(run.issueId) : undefined])
    if (!agent || !squad || agent.status !== 'active') return
    if (await this.gate(tx, agent, squad, issue ?? null)) return
    await queueWake(tx, { squadId: run.squadId, agentId: run.agentId, issueId: run.issueId, reason: 'continuation', continuationDepth: run.continuationDepth + 1 })
  }

  // Deadline and retention jobs ----------------------------------------------------------------

  async deadlineJob(job: Job): Promise<Record<string, unknown> | null> {
    const runId = String(job.payload.runId ?? '')
    const run = isUuid(runId) ? await this.ctx.storage.heartbeatRuns.get(runId) : undefined
    if (!run || run.status !== 'running' || !run.deadlineAt) return { skipped: run?.status ?? 'run not found' }
    const now = this.ctx.now()
    if (run.deadlineAt > now) throw new JobDeferred(run.deadlineAt)
    const ended = await this.finish(run.id, ['running'], { status: 'timed_out', error: 'The run passed its timeout and grace period without finishing.', finishedAt: now })
    return { timedOut: Boolean(ended) }
  }

  async retentionJob(): Promise<Record<string, unknown>> {
    const now = this.ctx.now().getTime()
    const day = 86_400_000
    const runsBefore = new Date(now - (this.options.retentionDays ?? 90) * day)
    const outputBefore = new Date(now - (this.options.outputRetentionDays ?? 14) * day)
    const jobsBefore = new Date(now - (this.options.jobRetentionDays ?? 7) * day)
    let runs = 0
    let outputs = 0
    let jobs = 0
    // Bounded batches keep each statement short; the next slot continues where this one stopped.
    for (let i = 0; i < 20; i++) {
      const r = await this.ctx.storage.heartbeatRuns.purge(runsBefore, outputBefore, 1_000)
      const j = await this.ctx.storage.jobs.purgeFinished(jobsBefore, 1_000)
      runs += r.runs
      outputs += r.outputs
      jobs += j
      if (r.runs < 1_000 && r.outputs < 1_000 && j < 1_000) break
    }
    return { runs, outputs, jobs }
  }
}

/**
 * Whether the woken agent is the assignee an Operator chose for the routine run: the routine's own
 * assignee (only an Operator may change it once an Operator wrote the env), or a run's assignee
 * override that no agent asked for.
 */
function operatorChoseAssignee(r: RoutineRunEnv, agentId: string): boolean {
  if (r.runAssigneeAgentId !== null && r.runAssigneeAgentId !== r.routineAssigneeAgentId) return r.requestedByAgentId === null && r.runAssigneeAgentId === agentId
  return r.routineAssigneeAgentId === agentId
}

/** The wake variables (docs/heartbeats.md: the wake environment): only those with a value are set. */
function wakeVariables(run: HeartbeatRun, token: string, apiUrl: string | undefined): Record<string, string> {
  const vars: Record<string, string> = {
    SVC_API_KEY: token,
    SVC_AGENT_ID: run.agentId,
    SVC_SQUAD_ID: run.squadId,
    SVC_RUN_ID: run.id,
    SVC_WAKE_REASON: run.reason,
  }
  if (apiUrl !== undefined) vars.SVC_API_URL = apiUrl
  if (run.issueId) vars.SVC_TASK_ID = run.issueId
  if (run.approvalId) vars.SVC_APPROVAL_ID = run.approvalId
  if (run.commentId) vars.SVC_WAKE_COMMENT_ID = run.commentId
  return vars
}
