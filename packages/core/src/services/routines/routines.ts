import type { Cron } from 'croner'
import { SlawError, invalid, notFound, type ErrorDetail } from '../../errors.js'
import { envNamePattern, validateBindings } from '../secrets/binding-usage.js'
import type {
  CatchUpPolicy,
  ConcurrencyPolicy,
  Routine,
  RoutineContent,
  RoutinePatch,
  RoutineRevision,
  RoutineRun,
  RoutineStatus,
  RoutineTrigger,
  RoutineTriggerPatch,
  SigningMode,
  TriggerSnapshot,
} from '../../contracts/routines.js'
import type { StorageSession } from '../../contracts/storage.js'
import type { IssuePriority, Job } from '../../records.js'
import { actorColumns, assertSquadVisible, isPrivileged, visibleById, type Actor } from '../foundation/actor.js'
import type { EnvBinding } from '../secrets/env-bindings.js'
import type { ServiceContext } from '../foundation/context.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import type { IssueService } from '../work/issues.js'
import { recordActivity } from '../audit/activity-recorder.js'
import { newPublicId, newTriggerSecret, storedSecret } from './trigger-signatures.js'
import { minScheduleGapSec, nextFireAfter, parseSchedule } from './cron.js'
import { maxRoutineTitle, normaliseVariables, type VariableInput } from './variables.js'
import { codeLoadingReason } from '../runs/agent-env.js'
import { assertAgentMayChange, assertAgentMayChangeTrigger, defaultRoutineLimits, sameEnv, writerOf, type RoutineLimits } from './routine-access.js'
import { RoutineFiring, type PublicFireInput, type RunRoutineInput } from './firing.js'
import type { SquadService } from '../org/squads.js'
import { inSquad } from '../foundation/same-squad.js'

export type { PublicFireInput, RunRoutineInput } from './firing.js'
const maxTriggersPerRoutine = 50
const maxEnvBindings = 100

export interface CreateRoutineInput {
  title: string
  description?: string | null
  projectId?: string | null
  goalId?: string | null
  parentIssueId?: string | null
  assigneeAgentId?: string | null
  priority?: IssuePriority
  status?: RoutineStatus
  concurrencyPolicy?: ConcurrencyPolicy
  catchUpPolicy?: CatchUpPolicy
  variables?: VariableInput[]
  env?: Record<string, EnvBinding>
}

export interface UpdateRoutineInput extends Partial<CreateRoutineInput> {
  /** The revision the writer saw: a newer one answers 409 revision_conflict. */
  baseRevisionId?: string
}

export type CreateTriggerInput =
  | { kind: 'schedule'; label?: string | null; enabled?: boolean; cronExpression: string; timezone?: string }
  | { kind: 'webhook'; label?: string | null; enabled?: boolean; signingMode?: SigningMode; replayWindowSec?: number }
  | { kind: 'api'; label?: string | null; enabled?: boolean }

export interface UpdateTriggerInput {
  label?: string | null
  enabled?: boolean
  cronExpression?: string
  timezone?: string
  signingMode?: SigningMode
  replayWindowSec?: number
}

export interface RoutineWithTriggers {
  routine: Routine
  triggers: RoutineTrigger[]
}

/** A trigger and, right after it was created, rotated or re-keyed, its secret (shown once). */
export interface TriggerWithSecret {
  trigger: RoutineTrigger
  secret: string | null
}

/**
 * Routines: recurring issue templates and their triggers. Every change records a revision. Runs
 * and fires are carried out by RoutineFiring (firing.ts); the methods here hand them over so
 * callers keep one service.
 */
export class RoutineService {
  private readonly firing: RoutineFiring

  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
    issues: IssueService,
    private readonly limits: Required<RoutineLimits> = defaultRoutineLimits,
  ) {
    this.firing = new RoutineFiring(ctx, squads, issues)
  }

  // Reads -------------------------------------------------------------------------------------------

  async visible(session: StorageSession, actor: Actor, id: string, opts: { forUpdate?: boolean } = {}): Promise<Routine> {
    return visibleById(actor, id, 'Routine', (id) => session.routines.get(id, opts))
  }

  async get(actor: Actor, id: string): Promise<RoutineWithTriggers> {
    const routine = await this.visible(this.ctx.storage, actor, id)
    return { routine, triggers: await this.ctx.storage.routines.listTriggers(routine.id) }
  }

  async list(actor: Actor, squadId: string, page: { limit?: number; offset?: number } = {}): Promise<Routine[]> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    return this.ctx.storage.routines.list(squadId, { limit: page.limit ?? 100, offset: page.offset ?? 0 })
  }

  async revisions(actor: Actor, id: string, page: { limit?: number; offset?: number } = {}): Promise<RoutineRevision[]> {
    const routine = await this.visible(this.ctx.storage, actor, id)
    return this.ctx.storage.routines.listRevisions(routine.id, { limit: page.limit ?? 100, offset: page.offset ?? 0 })
  }

  async runs(actor: Actor, id: string, page: { limit?: number; offset?: number } = {}): Promise<RoutineRun[]> {
    const routine = await this.visible(this.ctx.storage, actor, id)
    return this.ctx.storage.routines.listRuns(routine.id, { limit: page.limit ?? 100, offset: page.offset ?? 0 })
  }

  /**
   * The env bindings of the routine a run belongs to, for the wake environment of the issue the run
   * created (the run engine calls this for a wake carrying `routineRunId`). Bindings as written:
   * secret_ref bindings still need resolving through `ctx.secrets`.
   */
  envForRun(routineRunId: string): Promise<Record<string, EnvBinding> | null> {
    if (!isUuid(routineRunId)) return Promise.resolve(null)
    return this.ctx.storage.routines.envForRun(routineRunId)
  }

  // Routine writes ----------------------------------------------------------------------------------

  async create(actor: Actor, squadId: string, input: CreateRoutineInput): Promise<RoutineWithTriggers & { revision: RoutineRevision }> {
    return this.ctx.storage.transaction(async (tx) => {
      await this.squads.writable(tx, actor, squadId)
      if (input.status === 'archived') throw invalid('/status', 'a routine is created active or paused')
      if (actor.type === 'agent') {
        // Agent keys may not flood a squad with routines (docs/routines.md, Quotas).
        const made = await tx.routines.countCreatedByAgents(squadId)
        if (made >= this.limits.maxAgentRoutinesPerSquad) {
          throw new SlawError(
            'routine_quota_exceeded',
            `Agent keys have created ${made} active or paused routines in this squad; at most ${this.limits.maxAgentRoutinesPerSquad} (archive some, or ask an Operator).`,
          )
        }
      }
      const content: RoutineContent = {
        title: checkTitle(input.title),
        description: input.description ?? null,
        projectId: input.projectId ?? null,
        goalId: input.goalId ?? null,
        parentIssueId: input.parentIssueId ?? null,
        assigneeAgentId: input.assigneeAgentId ?? null,
        priority: input.priority ?? 'medium',
        status: input.status ?? 'active',
        concurrencyPolicy: input.concurrencyPolicy ?? 'coalesce_if_active',
        catchUpPolicy: input.catchUpPolicy ?? 'skip_missed',
        variables: normaliseVariables(input.variables ?? []),
        env: this.checkEnv(actor, input.env ?? {}),
      }
      // secret_ref bindings must name a live secret of this squad (and a version it has).
      content.env = await validateBindings(tx, squadId, content.env, actor)
      await this.checkRefs(tx, squadId, content)
      const revisionId = uuidv7()
      const routine = await tx.routines.insert({
        id: uuidv7(),
        squadId,
        ...content,
        createdByAgentId: actor.type === 'agent' ? actor.agentId : null,
        envWrittenBy: writerOf(actor),
        revisionId,
        revisionNumber: 1,
      })
      const revision = await tx.routines.insertRevision({
        id: revisionId,
        routineId: routine.id,
        squadId,
        number: 1,
        change: 'created',
        snapshot: { ...content, triggers: [] },
        ...revisionActor(actor),
      })
      await recordActivity(tx, actor, { squadId, action: 'routine.created', entityType: 'routine', entityId: routine.id, details: { title: routine.title, revision: 1 } })
      return { routine, triggers: [], revision }
    })
  }

  async update(actor: Actor, id: string, input: UpdateRoutineInput): Promise<RoutineWithTriggers> {
    return this.ctx.storage.transaction(async (tx) => {
      const current = await this.visible(tx, actor, id, { forUpdate: true })
      await this.squads.writable(tx, actor, current.squadId)
      assertAgentMayChange(actor, current)
      if (input.baseRevisionId !== undefined && input.baseRevisionId !== current.revisionId) {
        throw new SlawError('revision_conflict', `The routine changed since revision ${input.baseRevisionId}; its latest revision is ${current.revisionId}.`)
      }
      if (current.status === 'archived') throw new SlawError('invalid_state', 'The routine is archived; archived routines are permanent.')
      const patch: Partial<RoutineContent> = {}
      if (input.title !== undefined) patch.title = checkTitle(input.title)
      if (input.description !== undefined) patch.description = input.description
      if (input.projectId !== undefined) patch.projectId = input.projectId
      if (input.goalId !== undefined) patch.goalId = input.goalId
      if (input.parentIssueId !== undefined) patch.parentIssueId = input.parentIssueId
      if (input.assigneeAgentId !== undefined) patch.assigneeAgentId = input.assigneeAgentId
      if (input.priority !== undefined) patch.priority = input.priority
      if (input.status !== undefined) patch.status = input.status
      if (input.concurrencyPolicy !== undefined) patch.concurrencyPolicy = input.concurrencyPolicy
      if (input.catchUpPolicy !== undefined) patch.catchUpPolicy = input.catchUpPolicy
      if (input.variables !== undefined) patch.variables = normaliseVariables(input.variables)
      if (input.env !== undefined) patch.env = await validateBindings(tx, current.squadId, this.checkEnv(actor, input.env), actor)
      await this.checkRefs(tx, current.squadId, patch)
      // Whoever changes env writes it: its trust in an agent's environment follows the writer.
      const envWrittenBy = patch.env !== undefined && !sameEnv(patch.env, current.env) ? writerOf(actor) : current.envWrittenBy
      assertAgentMayChange(actor, current, { env: patch.env ?? current.env, envWrittenBy, assigneeAgentId: patch.assigneeAgentId !== undefined ? patch.assigneeAgentId : current.assigneeAgentId })
      const routine = await this.saveRevision(tx, actor, current, { ...patch, envWrittenBy }, 'updated')
      if (patch.status !== undefined && patch.status !== current.status) await this.statusChanged(tx, routine)
      await recordActivity(tx, actor, {
        squadId: routine.squadId,
        action: patch.status && patch.status !== current.status ? `routine.${statusVerb(patch.status)}` : 'routine.updated',
        entityType: 'routine',
        entityId: routine.id,
        // Field names only: a routine's description and env never reach the activity log.
        details: { fields: Object.keys(patch).join(','), revision: routine.revisionNumber },
      })
      return { routine, triggers: await tx.routines.listTriggers(routine.id) }
    })
  }

  /** Rolls the routine's own fields back to a revision (its status and triggers stay as they are) and records a new revision. */
  async restore(actor: Actor, id: string, revisionId: string): Promise<RoutineWithTriggers & { revision: RoutineRevision }> {
    return this.ctx.storage.transaction(async (tx) => {
      const current = await this.visible(tx, actor, id, { forUpdate: true })
      await this.squads.writable(tx, actor, current.squadId)
      const old = isUuid(revisionId) ? await tx.routines.getRevision(current.id, revisionId) : undefined
      if (!old) throw notFound('Revision')
      if (current.status === 'archived') throw new SlawError('invalid_state', 'The routine is archived; archived routines are permanent.')
      const { triggers: _triggers, status: _status, ...content } = old.snapshot
      assertAgentMayChange(actor, current)
      // Referenced records may be gone since: restore what still exists.
      const refs = await this.existingRefs(tx, current.squadId, content)
      // The env of the old revision is re-checked: an agent may not bring back a secret_ref or a
      // name that loads code. An unchanged env keeps its writer; a restored one is the restorer's.
      const envChanged = !sameEnv(content.env, current.env)
      if (envChanged) this.checkEnv(actor, content.env)
      const envWrittenBy = envChanged ? writerOf(actor) : current.envWrittenBy
      assertAgentMayChange(actor, current, { env: content.env, envWrittenBy, assigneeAgentId: refs.assigneeAgentId })
      const routine = await this.saveRevision(tx, actor, current, { ...content, ...refs, envWrittenBy }, 'restored')
      await recordActivity(tx, actor, {
        squadId: routine.squadId,
        action: 'routine.restored',
        entityType: 'routine',
        entityId: routine.id,
        details: { fromRevision: old.number, revision: routine.revisionNumber },
      })
      const revision = (await tx.routines.getRevision(routine.id, routine.revisionId))!
      return { routine, triggers: await tx.routines.listTriggers(routine.id), revision }
    })
  }

  // Triggers -----------------------------------------------------------------------------------------

  async createTrigger(actor: Actor, routineId: string, input: CreateTriggerInput): Promise<TriggerWithSecret> {
    const result = await this.ctx.storage.transaction(async (tx) => {
      const routine = await this.visible(tx, actor, routineId, { forUpdate: true })
      await this.squads.writable(tx, actor, routine.squadId)
      assertAgentMayChange(actor, routine)
      if (routine.status === 'archived') throw new SlawError('invalid_state', 'The routine is archived; archived routines are permanent.')
      const existing = await tx.routines.listTriggers(routine.id)
      if (existing.length >= maxTriggersPerRoutine) throw invalid('/', `a routine has at most ${maxTriggersPerRoutine} triggers`)
      const id = uuidv7()
      const now = this.ctx.now()
      let secret: string | null = null
      const base = {
        id,
        squadId: routine.squadId,
        routineId: routine.id,
        kind: input.kind,
        label: input.label ?? null,
        enabled: input.enabled ?? true,
        secretRotatedAt: null,
        createdByAgentId: actor.type === 'agent' ? actor.agentId : null,
      }
      let trigger: RoutineTrigger
      if (input.kind === 'schedule') {
        const timezone = input.timezone ?? 'UTC'
        const cron = parseSchedule(input.cronExpression, timezone, now)
        this.checkAgentSchedule(actor, cron, now)
        const cronExpression = cron.getPattern() ?? input.cronExpression.trim()
        const nextFireAt = base.enabled && routine.status === 'active' ? cron.nextRun(now) : null
        trigger = await tx.routines.insertTrigger({ ...base, cronExpression, timezone, nextFireAt, signingMode: null, replayWindowSec: null, publicId: null, secretHash: null, secretCiphertext: null })
      } else {
        const signingMode: SigningMode = input.kind === 'api' ? 'bearer' : (input.signingMode ?? 'bearer')
        const replayWindowSec = input.kind === 'webhook' ? (input.replayWindowSec ?? 300) : null
        if (signingMode !== 'none') secret = newTriggerSecret()
        const stored = secret ? storedSecret(signingMode, id, secret, this.ctx.masterKey) : { secretHash: null, secretCiphertext: null }
        trigger = await tx.routines.insertTrigger({ ...base, cronExpression: null, timezone: null, nextFireAt: null, signingMode, replayWindowSec, publicId: newPublicId(), ...stored })
      }
      await this.saveRevision(tx, actor, routine, {}, 'trigger_created')
      await recordActivity(tx, actor, { squadId: routine.squadId, action: 'routine.trigger_created', entityType: 'routine', entityId: routine.id, details: { triggerId: id, kind: input.kind } })
      return { trigger, secret }
    })
    return result
  }

  async updateTrigger(actor: Actor, triggerId: string, input: UpdateTriggerInput): Promise<TriggerWithSecret> {
    return this.ctx.storage.transaction(async (tx) => {
      const { trigger: current, routine } = await this.triggerForWrite(tx, actor, triggerId)
      const patch: RoutineTriggerPatch = {}
      let secret: string | null = null
      if (input.label !== undefined) patch.label = input.label
      if (input.enabled !== undefined) patch.enabled = input.enabled
      if (current.kind === 'schedule') {
        if (input.signingMode !== undefined) throw invalid('/signingMode', 'a schedule trigger has no signing mode')
        if (input.replayWindowSec !== undefined) throw invalid('/replayWindowSec', 'a schedule trigger has no replay window')
        const cronExpression = input.cronExpression ?? current.cronExpression!
        const timezone = input.timezone ?? current.timezone!
        const now = this.ctx.now()
        const cron = parseSchedule(cronExpression, timezone, now)
        if (input.cronExpression !== undefined || input.timezone !== undefined) this.checkAgentSchedule(actor, cron, now)
        if (input.cronExpression !== undefined) patch.cronExpression = cron.getPattern() ?? cronExpression.trim()
        if (input.timezone !== undefined) patch.timezone = timezone
        // A new pattern, zone or re-enabling starts counting from now: nothing missed is caught up.
        const enabled = patch.enabled ?? current.enabled
        if (input.cronExpression !== undefined || input.timezone !== undefined || patch.enabled !== undefined) {
          patch.nextFireAt = enabled && routine.status === 'active' ? cron.nextRun(now) : null
        }
      } else {
        if (input.cronExpression !== undefined) throw invalid('/cronExpression', `a ${current.kind} trigger has no schedule`)
        if (input.timezone !== undefined) throw invalid('/timezone', `a ${current.kind} trigger has no schedule`)
        if (current.kind === 'api' && input.signingMode !== undefined && input.signingMode !== 'bearer') throw invalid('/signingMode', 'an api trigger is always checked as bearer')
        if (current.kind === 'api' && input.replayWindowSec !== undefined) throw invalid('/replayWindowSec', 'an api trigger has no replay window')
        if (input.replayWindowSec !== undefined) patch.replayWindowSec = input.replayWindowSec
        if (input.signingMode !== undefined && input.signingMode !== current.signingMode) {
          // A bearer secret is kept only as a hash, an HMAC secret only encrypted: a new mode gets a new secret.
          patch.signingMode = input.signingMode
          secret = input.signingMode === 'none' ? null : newTriggerSecret()
          Object.assign(patch, secret ? storedSecret(input.signingMode, current.id, secret, this.ctx.masterKey) : { secretHash: null, secretCiphertext: null })
          patch.secretRotatedAt = this.ctx.now()
        }
      }
      const trigger = Object.keys(patch).length ? (await tx.routines.updateTrigger(current.id, patch))! : current
      await this.saveRevision(tx, actor, routine, {}, 'trigger_updated')
      await recordActivity(tx, actor, {
        squadId: routine.squadId,
        action: 'routine.trigger_updated',
        entityType: 'routine',
        entityId: routine.id,
        details: { triggerId: current.id, fields: Object.keys(input).join(','), ...(patch.signingMode ? { signingMode: patch.signingMode } : {}) },
      })
      return { trigger, secret }
    })
  }

  /** Deletes a trigger: its public URL and secret stop working with the commit. */
  async deleteTrigger(actor: Actor, triggerId: string): Promise<void> {
    await this.ctx.storage.transaction(async (tx) => {
      const { trigger, routine } = await this.triggerForWrite(tx, actor, triggerId, { allowArchived: true })
      await tx.routines.deleteTrigger(trigger.id)
      await this.saveRevision(tx, actor, routine, {}, 'trigger_deleted')
      await recordActivity(tx, actor, {
        squadId: routine.squadId,
        action: 'routine.trigger_deleted',
        entityType: 'routine',
        entityId: routine.id,
        details: { triggerId: trigger.id, kind: trigger.kind },
      })
    })
  }

  /** A new secret, shown once; the previous one fails from the commit on. */
  async rotateSecret(actor: Actor, triggerId: string): Promise<TriggerWithSecret> {
    return this.ctx.storage.transaction(async (tx) => {
      const { trigger: current, routine } = await this.triggerForWrite(tx, actor, triggerId)
      if (current.kind === 'schedule') throw new SlawError('invalid_state', 'A schedule trigger has no secret.')
      const mode = current.signingMode ?? 'bearer'
      if (mode === 'none') throw new SlawError('invalid_state', 'The trigger signs nothing (signingMode none); set a signing mode to get a secret.')
      const secret = newTriggerSecret()
      const trigger = (await tx.routines.updateTrigger(current.id, { ...storedSecret(mode, current.id, secret, this.ctx.masterKey), secretRotatedAt: this.ctx.now() }))!
      await this.saveRevision(tx, actor, routine, {}, 'secret_rotated')
      await recordActivity(tx, actor, { squadId: routine.squadId, action: 'routine.trigger_secret_rotated', entityType: 'routine', entityId: routine.id, details: { triggerId: current.id } })
      return { trigger, secret }
    })
  }

  // Runs (firing.ts) ---------------------------------------------------------------------------------

  /** `POST /api/routines/{id}/run`: runs now, in the caller's name. `created` is false for a repeated idempotencyKey. */
  run(actor: Actor, routineId: string, input: RunRoutineInput): Promise<{ run: RoutineRun; created: boolean }> {
    return this.firing.run(actor, routineId, input)
  }

  /** `POST /api/routine-triggers/public/{publicId}/fire` (firing.ts). */
  fire(publicId: string, req: PublicFireInput): Promise<{ run: RoutineRun; created: boolean }> {
    return this.firing.fire(publicId, req)
  }

  /** The `routine_run` job (firing.ts). */
  runJob(job: Job): Promise<Record<string, unknown>> {
    return this.firing.runJob(job)
  }

  /** One scheduler pass at `now` (firing.ts). */
  tickSchedules(now: Date = this.ctx.now(), batchSize = 100): Promise<number> {
    return this.firing.tickSchedules(now, batchSize)
  }

  // Internals ------------------------------------------------------------------------------------------

  /** Applies a change to the routine and records it as the next revision (snapshot of fields and triggers). */
  private async saveRevision(tx: StorageSession, actor: Actor, current: Routine, patch: RoutinePatch, change: string): Promise<Routine> {
    const revisionId = uuidv7()
    const number = current.revisionNumber + 1
    const routine = (await tx.routines.update(current.id, { ...patch, revisionId, revisionNumber: number }))!
    const triggers = await tx.routines.listTriggers(routine.id)
    await tx.routines.insertRevision({
      id: revisionId,
      routineId: routine.id,
      squadId: routine.squadId,
      number,
      change,
      snapshot: { ...contentOf(routine), triggers: triggers.map(triggerSnapshot) },
      ...revisionActor(actor),
    })
    return routine
  }

  /** Paused and archived routines hold no next due time (nothing to claim); resuming counts from now. */
  private async statusChanged(tx: StorageSession, routine: Routine): Promise<void> {
    const now = this.ctx.now()
    for (const t of await tx.routines.listTriggers(routine.id)) {
      if (t.kind !== 'schedule') continue
      const next = routine.status === 'active' && t.enabled ? nextFireAfter(t.cronExpression!, t.timezone!, now) : null
      await tx.routines.updateTrigger(t.id, { nextFireAt: next })
    }
  }

  private async triggerForWrite(tx: StorageSession, actor: Actor, triggerId: string, opts: { allowArchived?: boolean } = {}): Promise<{ trigger: RoutineTrigger; routine: Routine }> {
    const seen = isUuid(triggerId) ? await tx.routines.getTrigger(triggerId) : undefined
    if (!seen) throw notFound('Trigger')
    assertSquadVisible(actor, seen.squadId, 'Trigger')
    // Routine first, then the trigger again: the same lock order as every other routine write.
    const routine = (await tx.routines.get(seen.routineId, { forUpdate: true }))!
    const trigger = await tx.routines.getTrigger(triggerId)
    if (!trigger) throw notFound('Trigger')
    await this.squads.writable(tx, actor, routine.squadId)
    assertAgentMayChangeTrigger(actor, routine, trigger)
    if (!opts.allowArchived && routine.status === 'archived') throw new SlawError('invalid_state', 'The routine is archived; archived routines are permanent.')
    return { trigger, routine }
  }

  /**
   * Env bindings: names are environment variable names, never SVC_ (the wake variables); only the
   * Operator may bind a secret_ref (agents get 403) or set a name that loads code (agents get 400
   * with one detail per name; docs/security.md). The binding's shape was checked by the request schema.
   */
  private checkEnv(actor: Actor, env: Record<string, EnvBinding>): Record<string, EnvBinding> {
    const names = Object.keys(env)
    if (names.length > maxEnvBindings) throw invalid('/env', `at most ${maxEnvBindings} bindings`)
    const details: ErrorDetail[] = []
    for (const name of names) {
      if (!envNamePattern.test(name)) throw invalid(`/env/${name}`, 'must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)')
      if (name.toUpperCase().startsWith('SVC_')) details.push({ path: `/env/${name}`, message: 'SVC_ names are the wake variables; bind another name' })
      else if (actor.type === 'agent') {
        const why = codeLoadingReason(name)
        if (why) details.push({ path: `/env/${name}`, message: `only an Operator may set ${name}: ${why}` })
      }
      const b = env[name]!
      if (typeof b === 'object' && b.type === 'secret_ref' && !isPrivileged(actor)) throw new SlawError('forbidden', 'Only the Operator may bind a secret_ref.')
    }
    if (details.length) throw new SlawError('invalid_payload', details.map((d) => `${d.path} ${d.message}`).join('; '), details)
    return env
  }

  /** Agent-written schedules fire at most every `minAgentScheduleIntervalSec` (docs/routines.md, Quotas). */
  private checkAgentSchedule(actor: Actor, cron: Cron, now: Date): void {
    if (actor.type !== 'agent') return
    const min = this.limits.minAgentScheduleIntervalSec
    const gap = minScheduleGapSec(cron, now)
    if (gap < min)
      throw new SlawError('schedule_too_frequent', `The schedule fires every ${gap} seconds at times; a schedule written by an agent key fires at most every ${min} seconds.`, [
        { path: '/cronExpression', message: `at least ${min} seconds between due times` },
      ])
  }

  private async checkRefs(tx: StorageSession, squadId: string, c: Partial<RoutineContent>): Promise<void> {
    if (c.assigneeAgentId) {
      const found = isUuid(c.assigneeAgentId) ? await tx.agents.get(c.assigneeAgentId) : undefined
      const agent = inSquad(found, squadId, '/assigneeAgentId', 'assigneeAgentId must be an agent of this squad')
      if (agent.status === 'terminated') throw invalid('/assigneeAgentId', 'a terminated agent cannot be assigned')
    }
    if (c.projectId) {
      inSquad(isUuid(c.projectId) ? await tx.projects.get(c.projectId) : undefined, squadId, '/projectId', 'projectId must be a project of this squad')
    }
    if (c.goalId) {
      inSquad(isUuid(c.goalId) ? await tx.goals.get(c.goalId) : undefined, squadId, '/goalId', 'goalId must be a goal of this squad')
    }
    if (c.parentIssueId) {
      const found = isUuid(c.parentIssueId) ? await tx.issues.existingIds(squadId, [c.parentIssueId]) : []
      if (!found.length) throw invalid('/parentIssueId', 'parentIssueId must be an issue of this squad')
    }
  }

  /** The references of an old revision that still exist (the others become null). */
  private async existingRefs(tx: StorageSession, squadId: string, c: Pick<RoutineContent, 'assigneeAgentId' | 'projectId' | 'goalId' | 'parentIssueId'>) {
    const agent = c.assigneeAgentId ? await tx.agents.get(c.assigneeAgentId) : undefined
    const project = c.projectId ? await tx.projects.get(c.projectId) : undefined
    const goal = c.goalId ? await tx.goals.get(c.goalId) : undefined
    const parent = c.parentIssueId ? await tx.issues.existingIds(squadId, [c.parentIssueId]) : []
    return {
      assigneeAgentId: agent && agent.squadId === squadId && agent.status !== 'terminated' ? agent.id : null,
      projectId: project && project.squadId === squadId ? project.id : null,
      goalId: goal && goal.squadId === squadId ? goal.id : null,
      parentIssueId: parent[0] ?? null,
    }
  }
}

function checkTitle(raw: string): string {
  const title = raw.trim()
  if (!title) throw invalid('/title', 'title must not be blank')
  if (title.length > maxRoutineTitle) throw invalid('/title', `title must be at most ${maxRoutineTitle} characters`)
  return title
}

function statusVerb(status: RoutineStatus): string {
  return status === 'active' ? 'resumed' : status
}

function revisionActor(actor: Actor): { actorType: string; actorId: string } {
  const cols = actorColumns(actor)
  return { actorType: cols.actorType, actorId: cols.actorId }
}

function contentOf(r: Routine): RoutineContent {
  return {
    title: r.title,
    description: r.description,
    projectId: r.projectId,
    goalId: r.goalId,
    parentIssueId: r.parentIssueId,
    assigneeAgentId: r.assigneeAgentId,
    priority: r.priority,
    status: r.status,
    concurrencyPolicy: r.concurrencyPolicy,
    catchUpPolicy: r.catchUpPolicy,
    variables: r.variables,
    env: r.env,
  }
}

function triggerSnapshot(t: RoutineTrigger): TriggerSnapshot {
  return {
    id: t.id,
    kind: t.kind,
    label: t.label,
    enabled: t.enabled,
    cronExpression: t.cronExpression,
    timezone: t.timezone,
    signingMode: t.signingMode,
    replayWindowSec: t.replayWindowSec,
    publicId: t.publicId,
  }
}
