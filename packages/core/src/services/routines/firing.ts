import { SlawError, invalid } from '../../errors.js'
import type { NewRoutineRun, Routine, RoutineRun, RoutineTrigger } from '../../contracts/routines.js'
import type { StorageSession } from '../../contracts/storage.js'
import type { Job } from '../../records.js'
import { systemActor, visibleById, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import type { IssueService } from '../work/issues.js'
import { recordActivity } from '../audit/activity-recorder.js'
import { agentMayRunAs } from './routine-access.js'
import { missedRunCap, planFires } from './cron.js'
import { assertFireable, firedEntry, newRun, renderIssue, sameSigning, type Outcome, type RunRequest } from './run-records.js'
import { PublicFires, StaleTrigger, unknownTrigger, type Fired, type PreparedFire, type PublicFireInput } from './public-fire.js'
import type { SquadService } from '../org/squads.js'

export type { PublicFireInput } from './public-fire.js'

/** The job kind that executes a queued (schedule) run. */
export const routineRunJobKind = 'routine_run'

export interface RunRoutineInput {
  triggerId?: string
  payload?: Record<string, unknown>
  variables?: Record<string, unknown>
  projectId?: string | null
  assigneeAgentId?: string | null
  idempotencyKey?: string
  source?: 'manual' | 'api'
}

/**
 * Firing routines: manual, API, webhook and schedule runs share one path (variables, idempotency,
 * concurrency policy, issue, wake). Fires of one routine are serialised by a row lock on the
 * routine, so "is a run active?" is answered once per fire even across nodes. Public fires commit
 * in groups under that lock (public-fire.ts), falling back to this path one by one. Definitions
 * and triggers are written by RoutineService (routines.ts).
 */
export class RoutineFiring {
  /** Public fires: checked outside any transaction, committed in groups (public-fire.ts). */
  readonly publicFires: PublicFires

  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
    private readonly issues: IssueService,
  ) {
    this.publicFires = new PublicFires(ctx, squads, issues, (fire) => this.fireAlone(fire))
  }

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
  fire(publicId: string, req: PublicFireInput): Promise<Fired> {
    return this.publicFires.fire(publicId, req)
  }

  /**
   * One checked public fire in a transaction of its own: what a group of fires falls back to.
   * Fires of an always_enqueue routine do not depend on each other: they share the routine's row
   * lock (an edit in flight still waits for them, and they for it). Other policies ask "is a run
   * active?", so their fires take it exclusively. Should the policy change between the lookup and
   * the lock, the fire starts over with the exclusive lock.
   */
  async fireAlone(fire: PreparedFire): Promise<Fired> {
    const seen = fire.trigger
    let exclusive = fire.concurrencyPolicy !== 'always_enqueue'
    const attempt = () =>
      this.ctx.storage.transaction(async (tx) => {
        // Routine first, then the trigger: sent together, the read runs once the lock is granted.
        const [routine, trigger] = await Promise.all([tx.routines.get(seen.routineId, exclusive ? { forUpdate: true } : { forShare: true }), tx.routines.getTrigger(seen.id)])
        // Deleted, disabled or re-keyed since the check above: the commit order decides, and it says no.
        if (!routine || !trigger || !sameSigning(trigger, seen)) throw fire.cached ? new StaleTrigger() : unknownTrigger()
        if (!exclusive && routine.concurrencyPolicy !== 'always_enqueue') throw new RetryExclusive()
        return this.runNow(tx, systemActor(`routine-trigger:${trigger.id}`), routine, {
          source: trigger.kind === 'api' ? 'api' : 'webhook',
          triggerId: trigger.id,
          variables: fire.variables,
          payload: fire.payload,
          projectId: undefined,
          assigneeAgentId: undefined,
          idempotencyKey: fire.idempotencyKey,
          requestedByAgentId: null,
        })
      })
    try {
      return await attempt()
    } catch (err) {
      if (!(err instanceof RetryExclusive)) throw err
      exclusive = true
      return attempt()
    }
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
    const { values, title, description } = renderIssue(routine, req.variables, req.payload)
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
    // Independent writes, sent together: one round trip.
    await Promise.all([
      run.triggerId && run.source !== 'schedule' ? tx.routines.updateTrigger(run.triggerId, { lastFiredAt: run.finishedAt ?? this.ctx.now() }) : undefined,
      recordActivity(tx, actor, firedEntry(routine, run)),
    ])
  }
}

/** Schedule runs per `routine_run` job: enough to spare the queue 10,000 rows for 10,000 schedules, few enough to spread over nodes. */
const runsPerJob = 20

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

function requestOf(run: RoutineRun): Pick<RunRequest, 'projectId' | 'assigneeAgentId'> {
  return { projectId: run.projectId, assigneeAgentId: run.assigneeAgentId }
}
