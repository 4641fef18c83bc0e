import { SlawError, invalid, notFound } from '../../errors.js'
import type { ConcurrencyPolicy, NewRoutineRun, Routine, RoutineRun, RoutineTrigger } from '../../contracts/routines.js'
import type { StorageSession } from '../../contracts/storage.js'
import type { Agent, Squad } from '../../records.js'
import { recordActivities } from '../audit/activity-recorder.js'
import { systemActor, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { GroupCommit } from '../foundation/group-commit.js'
import { uuidv7 } from '../foundation/ids.js'
import type { SquadService } from '../org/squads.js'
import type { CreateIssueInput, IssueService } from '../work/issues.js'
import type { AssignmentWake } from '../runs/wake-causes.js'
import { assertFireable, firedEntry, newRun, renderIssue, sameSigning, type RunRequest } from './run-records.js'
import { TriggerCache } from './trigger-cache.js'
import { verifySignature, type SignedRequest } from './trigger-signatures.js'

const publicIdPattern = /^rtp_[A-Za-z0-9_-]{32}$/

export interface PublicFireInput extends SignedRequest {
  contentType: string | undefined
}

/** A public fire whose signature and body passed, ready to commit. */
export interface PreparedFire {
  /** The trigger as the signature was checked against it. */
  trigger: RoutineTrigger
  /** The routine's policy as read with the trigger: it picks the lock (shared for always_enqueue). */
  concurrencyPolicy: ConcurrencyPolicy
  /** The routine's assignee as read with the trigger: only a hint of which agent to read with the locks. */
  assigneeAgentId: string | null
  /** The trigger came from this node's cache: a mismatch under the lock starts the fire over. */
  cached: boolean
  payload: Record<string, unknown>
  variables: Record<string, unknown> | undefined
  idempotencyKey: string | null
}

export interface Fired {
  run: RoutineRun
  created: boolean
}

/** The cached trigger differs from the row under the lock: the fire starts over from the database. */
export class StaleTrigger extends Error {}

/** The group cannot answer every fire on its own (a refusal or a key taken by another transaction): each fire commits alone. */
class RetryAlone extends Error {}

export const unknownTrigger = () => notFound('Trigger')

/**
 * Public fires (`POST /api/routine-triggers/public/{publicId}/fire`). Outside any transaction: the
 * gate, the trigger (from a bounded cache, else one read), the signature and the body. Then fires
 * submitted at the same moment commit together (group commit): one transaction, each routine's
 * lock taken once, the fires planned one after the other in arrival order under the concurrency
 * policy, each with its own answer; their issues, wakes, runs and activity written a statement
 * per step for all of them. docs/routines.md, "Firing in groups".
 */
export class PublicFires {
  private readonly targets = new TriggerCache()
  private readonly batch: GroupCommit<PreparedFire, Fired>

  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
    private readonly issues: IssueService,
    /** One fire in a transaction of its own (RoutineFiring.fireAlone): the path every group falls back to. */
    alone: (fire: PreparedFire) => Promise<Fired>,
  ) {
    this.batch = new GroupCommit<PreparedFire, Fired>(
      async (fires) => {
        try {
          return await this.ctx.storage.transaction((tx) => this.commit(tx, fires))
        } catch (err) {
          if (!(err instanceof RetryAlone)) throw err
          return Promise.allSettled(fires.map(alone))
        }
      },
      alone,
      64,
      2,
    )
  }

  /** Unknown, disabled and deleted triggers answer the same 404. */
  async fire(publicId: string, req: PublicFireInput): Promise<Fired> {
    // The tower gate holds here as on every API route (the HTTP layer checks it first).
    const gate = this.ctx.towerGate?.()
    if (gate) throw new SlawError('instance_not_enrolled', gate.message)
    if (!publicIdPattern.test(publicId)) throw unknownTrigger()
    let result: Fired
    try {
      result = await this.batch.submit(await this.prepare(publicId, req, true))
    } catch (err) {
      if (!(err instanceof StaleTrigger)) throw err
      this.targets.forget(publicId)
      result = await this.batch.submit(await this.prepare(publicId, req, false))
    }
    if (result.created) this.ctx.kickJobs()
    return result
  }

  /** The trigger, the signature, the body and the idempotency key: no transaction, no lock. */
  private async prepare(publicId: string, req: PublicFireInput, useCache: boolean): Promise<PreparedFire> {
    let target = useCache ? this.targets.get(publicId) : undefined
    const cached = target !== undefined
    if (!target) {
      target = await this.ctx.storage.routines.getTriggerByPublicId(publicId)
      if (!target?.trigger.enabled || target.trigger.kind === 'schedule') throw unknownTrigger()
      this.targets.set(publicId, target)
    }
    let replayKey: string | null
    try {
      replayKey = verifySignature(target.trigger, req, this.ctx.now(), this.ctx.masterKey)
    } catch (err) {
      // A secret rotated or a mode changed on another node: the database decides, not the copy.
      if (!cached) throw err
      this.targets.forget(publicId)
      return this.prepare(publicId, req, false)
    }
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
    return { trigger: target.trigger, concurrencyPolicy: target.concurrencyPolicy, assigneeAgentId: target.assigneeAgentId, cached, payload, variables, idempotencyKey: idempotencyKey ?? null }
  }

  /**
   * A group of fires inside `tx`: one settled answer per fire, in order. A fire's refusal (trigger
   * changed, routine paused, bad variables) is its answer alone and writes nothing of it. Should the
   * group be unable to answer for each fire by itself (an issue refused: later fires may have been
   * planned against it; a key another transaction took meanwhile), it throws RetryAlone and rolls
   * back, and every fire commits alone.
   */
  private async commit(tx: StorageSession, fires: PreparedFire[]): Promise<Array<PromiseSettledResult<Fired>>> {
    // One pipeline, one round trip: each routine's lock in id order (exclusive when its policy asks
    // "is a run active?"), then the reads made under them, the assignees (as the trigger was read
    // with its routine) included: their issues check them. Statements on a transaction's connection
    // run in the order sent, each with a snapshot taken when it starts: the reads see every write
    // committed before the locks were granted.
    const routineIds = unique(fires.map((f) => f.trigger.routineId)).sort()
    const exclusive = new Set(fires.filter((f) => f.concurrencyPolicy !== 'always_enqueue').map((f) => f.trigger.routineId))
    const triggerIds = unique(fires.map((f) => f.trigger.id))
    const squadIds = unique(fires.map((f) => f.trigger.squadId))
    const activeIds = routineIds.filter((id) => exclusive.has(id))
    const assigneeIds = unique(fires.flatMap((f) => (f.assigneeAgentId === null ? [] : [f.assigneeAgentId])))
    const locks = routineIds.map((id) => tx.routines.get(id, exclusive.has(id) ? { forUpdate: true } : { forShare: true }))
    const triggerReads = triggerIds.map((id) => tx.routines.getTrigger(id))
    const squadReads = squadIds.map((id) => tx.squads.get(id))
    const activeReads = activeIds.map((id) => tx.routines.activeRun(id))
    const assigneeReads = assigneeIds.map((id) => tx.agents.get(id))
    const keyedReads = routineIds.map((id) => tx.routines.runsByIdempotencyKeys(id, unique(fires.flatMap((f) => (f.trigger.routineId === id && f.idempotencyKey !== null ? [f.idempotencyKey] : [])))))
    const [routineRows, triggerRows, , activeRows, keyedRows] = await Promise.all([
      Promise.all(locks),
      Promise.all(triggerReads),
      Promise.all(squadReads),
      Promise.all(activeReads),
      Promise.all(keyedReads),
      Promise.all(assigneeReads),
    ])
    const routines = new Map(routineIds.map((id, i) => [id, routineRows[i]]))
    const triggers = new Map(triggerIds.map((id, i) => [id, triggerRows[i]]))
    const squads = new Map(squadIds.map((id, i) => [id, squadReads[i]!]))
    const readSquad = (id: string): Promise<Squad | undefined> => squads.get(id) ?? tx.squads.get(id)
    // A routine whose assignee changed since its trigger was read: that agent is read now.
    const assignees = new Map(assigneeIds.map((id, i) => [id, assigneeReads[i]!]))
    const readAgent = (id: string): Promise<Agent | undefined> => assignees.get(id) ?? tx.agents.get(id)
    /** The active run of each exclusively locked routine, as the group's fires change it. */
    const active = new Map(activeIds.map((id, i) => [id, activeRows[i]?.id ?? null]))
    const stored = new Map(keyedRows.flat().map((r) => [keyOf(r.routineId, r.idempotencyKey!), r]))
    for (const f of fires) {
      const routine = routines.get(f.trigger.routineId)
      if (!routine || routine.concurrencyPolicy === f.concurrencyPolicy) continue
      // The policy changed since the trigger was read: the next fire reads it again.
      this.targets.forget(f.trigger.publicId)
      // Under a shared lock, "is a run active?" cannot be answered: the fires take the exclusive one alone.
      if (routine.concurrencyPolicy !== 'always_enqueue' && !exclusive.has(routine.id)) throw new RetryAlone()
    }

    // Each fire in arrival order: what it answers or writes. Nothing here reads the database.
    const now = this.ctx.now()
    const claimed = new Map<string, number>()
    const plans: Array<PromiseSettledResult<Plan>> = []
    for (const [i, f] of fires.entries()) {
      try {
        plans.push({ status: 'fulfilled', value: await this.plan(f, i, { routines, triggers, readSquad, active, stored, claimed, now }) })
      } catch (reason) {
        plans.push({ status: 'rejected', reason })
      }
    }
    const runs = plans.flatMap((p) => (p.status === 'fulfilled' && p.value.kind === 'run' ? [p.value] : []))

    // The issues (numbered, their activity, their assignees' wakes) of every fire that makes one.
    const creating = runs.filter((r) => r.issue !== undefined)
    if (creating.length) {
      const made = await this.issues.createMany(
        creating.map((r) => r.issue!),
        readSquad,
        readAgent,
      )
      for (const [k, r] of creating.entries()) {
        const m = made[k]!
        // Refused (the assignee terminated since, say): fires planned after it may lean on it.
        if (m.status === 'rejected') throw new RetryAlone()
        r.run.issueId = m.value.id
      }
    }

    // The runs, each trigger's last fire and the `routine.fired` entries: one pipeline.
    const inserting = runs.length ? tx.routines.insertRuns(runs.map((r) => r.run)) : Promise.resolve([])
    const rest = Promise.all([
      ...unique(runs.map((r) => r.run.triggerId!))
        .sort()
        .map((id) => tx.routines.updateTrigger(id, { lastFiredAt: now })),
      runs.length
        ? recordActivities(
            tx,
            runs.map((r) => ({ actor: r.actor, input: firedEntry(r.routine, r.run) })),
          )
        : undefined,
    ])
    const [inserted] = await Promise.all([inserting, rest])
    // Fewer rows: another transaction stored one of these idempotency keys meanwhile.
    if (inserted.length !== runs.length) throw new RetryAlone()
    const byId = new Map(inserted.map((r) => [r.id, r]))
    const runIds = plans.map((p) => (p.status === 'fulfilled' && p.value.kind === 'run' ? p.value.run.id : null))
    return plans.map((p): PromiseSettledResult<Fired> => {
      if (p.status === 'rejected') return p
      const plan = p.value
      if (plan.kind === 'stored') return { status: 'fulfilled', value: { run: plan.run, created: false } }
      if (plan.kind === 'duplicate') return { status: 'fulfilled', value: { run: byId.get(runIds[plan.of]!)!, created: false } }
      return { status: 'fulfilled', value: { run: byId.get(plan.run.id)!, created: true } }
    })
  }

  /** One fire of a group, given what the group read and what the fires before it decided. Throws to refuse it. */
  private async plan(f: PreparedFire, index: number, g: GroupState): Promise<Plan> {
    const routine = g.routines.get(f.trigger.routineId)
    const trigger = g.triggers.get(f.trigger.id)
    // Deleted, disabled or re-keyed since the check: the commit order decides, and it says no (a
    // cached copy starts over from the database, which may say yes with the current secret).
    if (!routine || !trigger || !sameSigning(trigger, f.trigger)) throw f.cached ? new StaleTrigger() : unknownTrigger()
    const req: RunRequest = {
      source: trigger.kind === 'api' ? 'api' : 'webhook',
      triggerId: trigger.id,
      variables: f.variables,
      payload: f.payload,
      projectId: undefined,
      assigneeAgentId: undefined,
      idempotencyKey: f.idempotencyKey,
      requestedByAgentId: null,
    }
    // A repeated key answers the stored run (even if the routine was paused since), or the run of
    // the fire before it in this group that holds the key.
    const key = f.idempotencyKey === null ? null : keyOf(routine.id, f.idempotencyKey)
    if (key !== null) {
      const run = g.stored.get(key)
      if (run) return { kind: 'stored', run }
      const first = g.claimed.get(key)
      if (first !== undefined) return { kind: 'duplicate', of: first }
    }
    assertFireable(routine)
    const { values, title, description } = renderIssue(routine, f.variables, f.payload)
    const actor = systemActor(`routine-trigger:${trigger.id}`)
    // Creating the issue checks the squad, and a coalesced or skipped run checks it all the same.
    await this.squads.writableRow(actor, routine.squadId, () => g.readSquad(routine.squadId))
    const id = uuidv7()
    if (key !== null) g.claimed.set(key, index)
    const base = { ...newRun(routine, req, id), variables: values, finishedAt: g.now }
    if (routine.concurrencyPolicy !== 'always_enqueue') {
      const activeId = g.active.get(routine.id)
      if (activeId) return { kind: 'run', routine, actor, run: { ...base, status: routine.concurrencyPolicy === 'coalesce_if_active' ? 'coalesced' : 'skipped', linkedRunId: activeId } }
      // This fire's issue is the routine's active run for the fires after it.
      g.active.set(routine.id, id)
    }
    const input: CreateIssueInput = {
      title,
      description,
      priority: routine.priority,
      assigneeAgentId: routine.assigneeAgentId,
      projectId: routine.projectId,
      goalId: routine.goalId,
      parentId: routine.parentIssueId,
    }
    return { kind: 'run', routine, actor, run: { ...base, status: 'issue_created' }, issue: { actor, squadId: routine.squadId, input, opts: { wake: { reason: 'routine', routineRunId: id } } } }
  }
}

type Plan =
  | { kind: 'stored'; run: RoutineRun }
  | { kind: 'duplicate'; of: number }
  | {
      kind: 'run'
      routine: Routine
      actor: Actor
      run: NewRoutineRun
      issue?: { actor: Actor; squadId: string; input: CreateIssueInput; opts: { wake: AssignmentWake } }
    }

interface GroupState {
  routines: Map<string, Routine | undefined>
  triggers: Map<string, RoutineTrigger | undefined>
  readSquad: (id: string) => Promise<Squad | undefined>
  active: Map<string, string | null>
  stored: Map<string, RoutineRun>
  claimed: Map<string, number>
  now: Date
}

const keyOf = (routineId: string, key: string) => `${routineId}\u0000${key}`
const unique = <T>(xs: T[]): T[] => [...new Set(xs)]

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
