import { SlawError, invalid, notFound } from '../../errors.js'
import type { NewRoutineRun, Routine, RoutineRun, RoutineRunSource, RoutineTrigger } from '../../contracts/routines.js'
import type { StorageSession } from '../../contracts/storage.js'
import type { Job } from '../../records.js'
import { systemActor, visibleById, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import type { IssueService } from '../work/issues.js'
import { recordActivity } from '../audit/activity-recorder.js'
import { verifySignature, type SignedRequest } from './trigger-signatures.js'
import { agentMayRunAs } from './routine-access.js'
import { missedRunCap, planFires } from './cron.js'
import { maxRoutineTitle, renderTemplate, resolveVariables, type VariableValue } from './variables.js'
import type { SquadService } from '../org/squads.js'

/** The job kind that executes a queued (schedule) run. */
export const routineRunJobKind = 'routine_run'
const publicIdPattern = /^rtp_[A-Za-z0-9_-]{32}$/

export interface RunRoutineInput {
  triggerId?: string
  payload?: Record<string, unknown>
  variables?: Record<string, unknown>
  projectId?: string | null
  assigneeAgentId?: string | null
  idempotencyKey?: string
  source?: 'manual' | 'api'
}

export interface PublicFireInput extends SignedRequest {
  contentType: string | undefined
}

interface RunRequest {
  source: RoutineRunSource
  triggerId: string | null
  variables: Record<string, unknown> | undefined
  payload: Record<string, unknown> | undefined
  projectId: string | null | undefined
  assigneeAgentId: string | null | undefined
  idempotencyKey: string | null
  /** The agent whose key asked for the run (manual/API by an agent key), else null. */
  requestedByAgentId: string | null
}

type Outcome = Pick<RoutineRun, 'status' | 'issueId' | 'linkedRunId'> & { variables: Record<string, VariableValue> }

/**
 * Firing routines: manual, API, webhook and schedule runs share one path (variables, idempotency,
 * concurrency policy, issue, wake). Fires of one routine are serialised by a row lock on the
 * routine, so "is a run active?" is answered once per fire even across nodes. Definitions and
 * triggers are written by RoutineService (routines.ts).
 */
export class RoutineFiring {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
    private readonly issues: IssueService,
  ) {}

  /** `POST /api/routines/{id}/run`: runs now, in the caller's name. `created` is false for a repeated idempotencyKey. */
  async run(actor: Actor, routineId: string, input: RunRoutineInput): Promise<{ run: RoutineRun; created: boolean }> {
    const result = await this.ctx.storage.transaction(async (tx) => {
      const routine = await visibleById(actor, routineId, 'Routine', (id) => tx.routines.get(id, { forUpdate: true }))
      let triggerId: string | null = null
      if (input.triggerId !== undefined) {
        const trigger = isUuid(input.triggerId) ? await tx.routines.getTrigger(input.triggerId) : undefined
        if (!trigger || trigger.routineId !== routine.id) throw invalid('/triggerId', 'triggerId must be a trigger of this routine')
        triggerId = trigger.id
      }
      // A routine's secrets and Operator-written env go only to the assignee an Operator chose.
      const refused = agentMayRunAs(actor, routine, input.assigneeAgentId)
      if (refused) throw new SlawError('forbidden', refused)
      return this.runNow(tx, actor, routine, {
        source: input.source ?? 'manual',
        triggerId,
        variables: input.variables,
        payload: input.payload,
        projectId: input.projectId,
        assigneeAgentId: input.assigneeAgentId,
        idempotencyKey: input.idempotencyKey ?? null,
        requestedByAgentId: actor.type === 'agent' ? actor.agentId : null,
      })
    })
    if (result.created) this.ctx.kickJobs()
    return result
  }

  /**
   * `POST /api/routine-triggers/public/{publicId}/fire`: no API key; the trigger's signing mode
   * decides. Unknown, disabled and deleted triggers answer the same 404.
   */
  async fire(publicId: string, req: PublicFireInput): Promise<{ run: RoutineRun; created: boolean }> {
    const unknown = () => notFound('Trigger')
    // The tower gate holds here as on every API route (the HTTP layer checks it first).
    const gate = this.ctx.towerGate?.()
    if (gate) throw new SlawError('instance_not_enrolled', gate.message)
    if (!publicIdPattern.test(publicId)) throw unknown()
    const target = await this.ctx.storage.routines.getTriggerByPublicId(publicId)
    if (!target || !target.trigger.enabled || target.trigger.kind === 'schedule') throw unknown()
    const seen = target.trigger
    const replayKey = verifySignature(seen, req, this.ctx.now(), this.ctx.masterKey)
    const payload = parsePayload(req)
    const header = (name: string) => {
      const v = req.headers[name]
      return Array.isArray(v) ? v[0] : v
    }
    const bodyKey = typeof payload.idempotencyKey === 'string' ? payload.idempotencyKey : undefined
    // HMAC modes decide idempotency from signed material only (the body's key, else the signature):
    // an unsigned header (Idempotency-Key, X-GitHub-Delivery) changed or dropped never makes a
    // captured request new. Bearer and none sign nothing about the request, so the header counts.
    const idempotencyKey = replayKey !== null ? (bodyKey ?? replayKey) : (header('idempotency-key') ?? bodyKey)
    if (idempotencyKey !== undefined && (idempotencyKey.length < 1 || idempotencyKey.length > 255)) {
      throw invalid(replayKey === null && header('idempotency-key') !== undefined ? '/headers/idempotency-key' : '/idempotencyKey', 'must be 1 to 255 characters')
    }
    const variables = payload.variables && typeof payload.variables === 'object' && !Array.isArray(payload.variables) ? (payload.variables as Record<string, unknown>) : undefined
    // Fires of an always_enqueue routine do not depend on each other: they share the routine's row
    // lock (an edit in flight still waits for them, and they for it). Other policies ask "is a run
    // active?", so their fires take it exclusively. Should the policy change between the lookup and
    // the lock, the fire starts over with the exclusive lock.
    let exclusive = target.concurrencyPolicy !== 'always_enqueue'
    const attempt = () =>
      this.ctx.storage.transaction(async (tx) => {
        const routine = await tx.routines.get(seen.routineId, exclusive ? { forUpdate: true } : { forShare: true })
        if (!routine) throw unknown()
        if (!exclusive && routine.concurrencyPolicy !== 'always_enqueue') throw new RetryExclusive()
        // Deleted, disabled or re-keyed since the check above: the commit order decides, and it says no.
        const trigger = await tx.routines.getTrigger(seen.id)
        if (!trigger || !trigger.enabled || trigger.secretHash !== seen.secretHash || trigger.secretCiphertext !== seen.secretCiphertext) throw unknown()
        return this.runNow(tx, systemActor(`routine-trigger:${trigger.id}`), routine, {
          source: trigger.kind === 'api' ? 'api' : 'webhook',
          triggerId: trigger.id,
          variables,
          payload,
          projectId: undefined,
          assigneeAgentId: undefined,
          idempotencyKey: idempotencyKey ?? null,
          requestedByAgentId: null,
        })
      })
    let result: { run: RoutineRun; created: boolean }
    try {
      result = await attempt()
    } catch (err) {
      if (!(err instanceof RetryExclusive)) throw err
      exclusive = true
      result = await attempt()
    }
    if (result.created) this.ctx.kickJobs()
    return result
  }

  /**
   * The `routine_run` job: executes the queued schedule runs it names, each in a transaction of its
   * own. A run that is no longer queued (done by an earlier attempt of this job) is passed over, so a
   * job taken over after a crash repeats nothing.
   */
  async runJob(job: Job): Promise<Record<string, unknown>> {
    const ids = Array.isArray(job.payload.routineRunIds) ? job.payload.routineRunIds.map(String) : [String(job.payload.routineRunId ?? '')]
    const statuses: Record<string, number> = {}
    for (const id of ids) {
      const status = await this.executeQueued(id)
      statuses[status] = (statuses[status] ?? 0) + 1
    }
    this.ctx.kickJobs()
    return { runs: ids.length, statuses }
  }

  /** Executes one queued run; a refusal marks it failed with its reason. Returns the run's status. */
  private async executeQueued(runId: string): Promise<string> {
    try {
      return await this.ctx.storage.transaction(async (tx) => {
        const seen = isUuid(runId) ? await tx.routines.getRun(runId) : undefined
        if (!seen || seen.status !== 'queued') return seen?.status ?? 'gone'
        // Routine first, then the run: the lock order of every fire.
        const routine = await tx.routines.get(seen.routineId, { forUpdate: true })
        const run = await tx.routines.getRun(runId, { forUpdate: true })
        if (!routine || !run || run.status !== 'queued') return run?.status ?? 'gone'
        if (routine.status !== 'active') throw new SlawError('invalid_state', `The routine is ${routine.status}.`)
        const actor = systemActor(run.triggerId ? `routine-trigger:${run.triggerId}` : 'routines')
        const outcome = await this.perform(tx, actor, routine, run.id, { ...requestOf(run), variables: undefined, payload: run.payload ?? undefined })
        return (await this.finish(tx, actor, routine, run, outcome)).status
      })
    } catch (err) {
      if (!(err instanceof SlawError)) throw err
      await this.ctx.storage.transaction(async (tx) => {
        const run = await tx.routines.getRun(runId, { forUpdate: true })
        if (!run || run.status !== 'queued') return
        await tx.routines.updateRun(run.id, { status: 'failed', error: err.message.slice(0, 2000), finishedAt: this.ctx.now() })
        await recordActivity(tx, systemActor('routines'), {
          squadId: run.squadId,
          action: 'routine.run_failed',
          entityType: 'routine',
          entityId: run.routineId,
          details: { runId: run.id, source: run.source, error: err.message.slice(0, 500) },
        })
      })
      return 'failed'
    }
  }

  /**
   * One scheduler pass at `now`: claims due schedules (each node skips those another node holds),
   * records one queued run per due time to fire (at most one per trigger and due time, enforced by
   * a unique index), enqueues its job and advances the trigger's next due time, all in one
   * transaction per batch, so a crash loses or repeats nothing. Returns the number of runs queued.
   */
  async tickSchedules(now: Date = this.ctx.now(), batchSize = 100): Promise<number> {
    // A gated instance (tower `enforce`, not enrolled) claims nothing: due times wait, and the
    // catch-up policy decides about them once the gate opens.
    if (this.ctx.towerGate?.()) return 0
    let queued = 0
    for (;;) {
      const { claimed, added } = await this.ctx.storage.transaction(async (tx) => {
        const due = await tx.routines.claimDueSchedules(now, batchSize)
        const fresh: NewRoutineRun[] = []
        const advance: Array<{ id: string; nextFireAt: Date | null; lastFiredAt: Date }> = []
        for (const { trigger, catchUpPolicy } of due) {
          const plan = planFires(trigger.cronExpression!, trigger.timezone!, trigger.nextFireAt!, now, catchUpPolicy === 'skip_missed' ? 1 : missedRunCap)
          for (const at of plan.fire) fresh.push(scheduleRun(trigger, at))
          advance.push({ id: trigger.id, nextFireAt: plan.next, lastFiredAt: now })
          if (plan.dropped > 0) {
            await recordActivity(tx, systemActor('scheduler'), {
              squadId: trigger.squadId,
              action: 'routine.schedule_missed',
              entityType: 'routine',
              entityId: trigger.routineId,
              details: { triggerId: trigger.id, dropped: plan.dropped, catchUpPolicy },
            })
          }
        }
        // A due time already recorded (the unique index on trigger and due time) is not inserted again.
        const inserted = await tx.routines.insertRuns(fresh)
        for (let i = 0; i < inserted.length; i += runsPerJob) {
          const chunk = inserted.slice(i, i + runsPerJob)
          await tx.jobs.enqueue({ id: uuidv7(), kind: routineRunJobKind, squadId: chunk.length === 1 ? chunk[0]!.squadId : null, payload: { routineRunIds: chunk.map((r) => r.id) } })
        }
        await tx.routines.advanceSchedules(advance)
        return { claimed: due.length, added: inserted.length }
      })
      queued += added
      if (claimed < batchSize) break
    }
    if (queued) this.ctx.kickJobs()
    return queued
  }

  // Internals ------------------------------------------------------------------------------------------

  /** The shared run path of manual, API and webhook runs (inside the caller's transaction, routine row locked). */
  private async runNow(tx: StorageSession, actor: Actor, routine: Routine, req: RunRequest): Promise<{ run: RoutineRun; created: boolean }> {
    // With an idempotency key the run row comes first: a repeated key finds the stored run (even if
    // the routine was paused since) and changes nothing. Without one, the finished run is written
    // once at the end. Everything rolls back on a refusal.
    let queued: RoutineRun | undefined
    if (req.idempotencyKey !== null) {
      const { run, created } = await tx.routines.insertRun(newRun(routine, req, uuidv7()))
      if (!created) return { run, created: false }
      queued = run
    }
    assertFireable(routine)
    const runId = queued?.id ?? uuidv7()
    const outcome = await this.perform(tx, actor, routine, runId, req)
    // Creating the issue checked the squad; a coalesced or skipped run checks it here.
    if (outcome.status !== 'issue_created') await this.squads.writable(tx, actor, routine.squadId)
    const now = this.ctx.now()
    const run = queued ? (await tx.routines.updateRun(queued.id, { ...outcome, finishedAt: now }))! : (await tx.routines.insertRun({ ...newRun(routine, req, runId), ...outcome, finishedAt: now })).run
    await this.recordFire(tx, actor, routine, run)
    return { run, created: true }
  }

  /** Variables, title, concurrency policy, then the issue and its assignee's wake. Throws SlawError to refuse. */
  private async perform(tx: StorageSession, actor: Actor, routine: Routine, runId: string, req: Pick<RunRequest, 'variables' | 'payload' | 'projectId' | 'assigneeAgentId'>): Promise<Outcome> {
    const values = resolveVariables(routine.variables, req.variables, req.payload)
    const title = renderTemplate(routine.title, routine.variables, values).trim()
    if (!title) throw invalid('/title', 'the title is blank after substituting the variables')
    if (title.length > maxRoutineTitle) throw invalid('/title', `the title is ${title.length} characters after substituting the variables; at most ${maxRoutineTitle}`)
    const description = routine.description === null ? null : renderTemplate(routine.description, routine.variables, values)
    if (routine.concurrencyPolicy !== 'always_enqueue') {
      const active = await tx.routines.activeRun(routine.id)
      if (active) return { status: routine.concurrencyPolicy === 'coalesce_if_active' ? 'coalesced' : 'skipped', linkedRunId: active.id, issueId: null, variables: values }
    }
    const assigneeAgentId = req.assigneeAgentId !== undefined && req.assigneeAgentId !== null ? req.assigneeAgentId : routine.assigneeAgentId
    const projectId = req.projectId !== undefined && req.projectId !== null ? req.projectId : routine.projectId
    const issue = await this.issues.create(
      actor,
      routine.squadId,
      {
        title,
        description,
        priority: routine.priority,
        assigneeAgentId,
        projectId,
        goalId: routine.goalId,
        parentId: routine.parentIssueId,
      },
      { wake: { reason: 'routine', routineRunId: runId } },
    )
    return { status: 'issue_created', issueId: issue.id, linkedRunId: null, variables: values }
  }

  private async finish(tx: StorageSession, actor: Actor, routine: Routine, run: RoutineRun, outcome: Outcome): Promise<RoutineRun> {
    const done = (await tx.routines.updateRun(run.id, { ...outcome, finishedAt: this.ctx.now() }))!
    await this.recordFire(tx, actor, routine, done)
    return done
  }

  /** The trigger's last fire (but a schedule's, which the scheduler keeps) and the `routine.fired` entry. */
  private async recordFire(tx: StorageSession, actor: Actor, routine: Routine, run: RoutineRun): Promise<void> {
    if (run.triggerId && run.source !== 'schedule') await tx.routines.updateTrigger(run.triggerId, { lastFiredAt: run.finishedAt ?? this.ctx.now() })
    await recordActivity(tx, actor, {
      squadId: routine.squadId,
      action: 'routine.fired',
      entityType: 'routine',
      entityId: routine.id,
      details: {
        runId: run.id,
        source: run.source,
        status: run.status,
        ...(run.triggerId ? { triggerId: run.triggerId } : {}),
        ...(run.issueId ? { issueId: run.issueId } : {}),
        ...(run.linkedRunId ? { linkedRunId: run.linkedRunId } : {}),
        ...(run.scheduledFor ? { scheduledFor: run.scheduledFor.toISOString() } : {}),
      },
    })
  }
}

/** Schedule runs per `routine_run` job: enough to spare the queue 10,000 rows for 10,000 schedules, few enough to spread over nodes. */
const runsPerJob = 20

function newRun(routine: Routine, req: RunRequest, id: string): NewRoutineRun {
  return {
    id,
    squadId: routine.squadId,
    routineId: routine.id,
    triggerId: req.triggerId,
    source: req.source,
    status: 'queued',
    scheduledFor: null,
    idempotencyKey: req.idempotencyKey,
    variables: {},
    payload: null,
    projectId: req.projectId ?? null,
    assigneeAgentId: req.assigneeAgentId ?? null,
    requestedByAgentId: req.requestedByAgentId,
    issueId: null,
    linkedRunId: null,
    error: null,
  }
}

function scheduleRun(trigger: RoutineTrigger, at: Date): NewRoutineRun {
  return {
    id: uuidv7(),
    squadId: trigger.squadId,
    routineId: trigger.routineId,
    triggerId: trigger.id,
    source: 'schedule',
    status: 'queued',
    scheduledFor: at,
    idempotencyKey: null,
    variables: {},
    payload: null,
    projectId: null,
    assigneeAgentId: null,
    requestedByAgentId: null,
    issueId: null,
    linkedRunId: null,
    error: null,
  }
}

/** Thrown inside a fire that took the shared lock of a routine whose policy now needs the exclusive one. */
class RetryExclusive extends Error {}

function assertFireable(routine: Routine): void {
  if (routine.status !== 'active') throw new SlawError('invalid_state', `The routine is ${routine.status}; only an active routine fires.`)
}
function requestOf(run: RoutineRun): Pick<RunRequest, 'projectId' | 'assigneeAgentId'> {
  return { projectId: run.projectId, assigneeAgentId: run.assigneeAgentId }
}

/** A public fire's body: empty, or a JSON object (any other JSON value is 400). Non-JSON bodies are signed but carry no payload. */
function parsePayload(req: PublicFireInput): Record<string, unknown> {
  if (req.rawBody.length === 0) return {}
  const type = (req.contentType ?? '').toLowerCase()
  if (!type.includes('json')) return {}
  let value: unknown
  try {
    value = JSON.parse(req.rawBody.toString('utf8'))
  } catch {
    throw new SlawError('invalid_payload', 'The body is not valid JSON.', [{ path: '/', message: 'malformed JSON' }])
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw invalid('/', 'the body must be a JSON object')
  return value as Record<string, unknown>
}
