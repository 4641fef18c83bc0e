/**
 * Routines in storage: recurring issue templates, their revisions, triggers and runs.
 * Part of the Storage contract (storage.ts re-exports everything here).
 */
import type { CatchUpPolicy, ConcurrencyPolicy, EnvBinding, EnvWriter, Routine, RoutineContent, RoutineRevision, RoutineRun, RoutineTrigger } from '../records/routines.js'

// The records are defined in records/routines.ts.
export * from '../records/routines.js'

export type NewRoutine = Omit<Routine, 'createdAt' | 'updatedAt'>
export type RoutinePatch = Partial<RoutineContent> & { envWrittenBy?: EnvWriter; revisionId?: string; revisionNumber?: number }

export type NewRoutineTrigger = Omit<RoutineTrigger, 'createdAt' | 'updatedAt' | 'lastFiredAt'>
export type RoutineTriggerPatch = Partial<
  Pick<RoutineTrigger, 'label' | 'enabled' | 'cronExpression' | 'timezone' | 'nextFireAt' | 'signingMode' | 'replayWindowSec' | 'secretHash' | 'secretCiphertext' | 'secretRotatedAt' | 'lastFiredAt'>
>

export type NewRoutineRun = Omit<RoutineRun, 'createdAt' | 'finishedAt'> & { finishedAt?: Date | null }
export type RoutineRunPatch = Partial<Pick<RoutineRun, 'status' | 'variables' | 'issueId' | 'linkedRunId' | 'error' | 'finishedAt' | 'payload'>>

/**
 * What the run engine needs to decide which of a routine's env reaches the wake of a run's issue:
 * the bindings, who wrote them, and whether the woken agent is the assignee an Operator chose.
 */
export interface RoutineRunEnv {
  env: Record<string, EnvBinding>
  envWrittenBy: EnvWriter
  /** The routine's own assignee, and its creator (null: an Operator). */
  routineAssigneeAgentId: string | null
  createdByAgentId: string | null
  /** The run's assignee override, and the agent whose key asked for the run (null: an Operator, a trigger or the scheduler). */
  runAssigneeAgentId: string | null
  requestedByAgentId: string | null
}

/** A schedule trigger claimed by `claimDueSchedules`, with what its routine needs to fire it. */
export interface DueSchedule {
  trigger: RoutineTrigger
  catchUpPolicy: CatchUpPolicy
}

export interface RoutineRepository {
  insert(routine: NewRoutine): Promise<Routine>
  /**
   * `forUpdate` locks the row until commit so fires of one routine and its edits are serialised;
   * `forShare` only keeps edits out (fires of an `always_enqueue` routine need no more).
   */
  get(id: string, opts?: { forUpdate?: boolean; forShare?: boolean }): Promise<Routine | undefined>
  list(squadId: string, page: { limit: number; offset?: number }): Promise<Routine[]>
  update(id: string, patch: RoutinePatch): Promise<Routine | undefined>

  insertRevision(revision: Omit<RoutineRevision, 'createdAt'>): Promise<RoutineRevision>
  getRevision(routineId: string, id: string): Promise<RoutineRevision | undefined>
  /** Newest first. */
  listRevisions(routineId: string, page: { limit: number; offset?: number }): Promise<RoutineRevision[]>

  insertTrigger(trigger: NewRoutineTrigger): Promise<RoutineTrigger>
  getTrigger(id: string): Promise<RoutineTrigger | undefined>
  /**
   * The trigger of a public URL, with its routine's concurrency policy (to pick the lock a fire
   * takes) and assignee (read with the lock, so a fire's issue need not read it after).
   */
  getTriggerByPublicId(publicId: string): Promise<{ trigger: RoutineTrigger; concurrencyPolicy: ConcurrencyPolicy; assigneeAgentId: string | null } | undefined>
  listTriggers(routineId: string): Promise<RoutineTrigger[]>
  updateTrigger(id: string, patch: RoutineTriggerPatch): Promise<RoutineTrigger | undefined>
  deleteTrigger(id: string): Promise<boolean>

  /**
   * Locks up to `limit` enabled schedule triggers of active routines due at `now` (nextFireAt <= now)
   * until the transaction ends, skipping rows another node holds (FOR UPDATE SKIP LOCKED). Call it
   * inside a transaction, and advance each trigger's nextFireAt in the same one.
   */
  claimDueSchedules(now: Date, limit: number): Promise<DueSchedule[]>

  /**
   * Inserts the run unless one with the same (routineId, idempotencyKey) or (triggerId,
   * scheduledFor) exists; then `created` is false and `run` is the stored one.
   */
  insertRun(run: NewRoutineRun): Promise<{ run: RoutineRun; created: boolean }>
  /** Inserts many runs in one statement, skipping those that conflict as `insertRun` would; returns the inserted ones. */
  insertRuns(runs: NewRoutineRun[]): Promise<RoutineRun[]>
  /** Stores the next due time (and last fire) of many schedule triggers in one statement. */
  advanceSchedules(updates: Array<{ id: string; nextFireAt: Date | null; lastFiredAt: Date }>): Promise<void>
  /** The routine's runs holding any of these idempotency keys (one statement, for a group of fires). */
  runsByIdempotencyKeys(routineId: string, keys: string[]): Promise<RoutineRun[]>
  getRun(id: string, opts?: { forUpdate?: boolean }): Promise<RoutineRun | undefined>
  updateRun(id: string, patch: RoutineRunPatch): Promise<RoutineRun | undefined>
  /** Newest first. */
  listRuns(routineId: string, page: { limit: number; offset?: number }): Promise<RoutineRun[]>
  /** The most recent run of the routine whose issue is still open (not done, cancelled or deleted). */
  activeRun(routineId: string): Promise<RoutineRun | undefined>
  /**
   * The env bindings of the routine a run belongs to (for the wake environment of the run's issue),
   * or null when the run or its routine no longer exists.
   */
  envForRun(routineRunId: string): Promise<Record<string, EnvBinding> | null>
  /** `envForRun` with who wrote it and who the run was for; null when the run or its routine no longer exists. */
  runEnv(routineRunId: string): Promise<RoutineRunEnv | null>
  /** How many active or paused routines of the squad agent keys created (the agent routine quota). */
  countCreatedByAgents(squadId: string): Promise<number>
}
