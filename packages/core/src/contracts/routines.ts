/**
 * Routines in storage: recurring issue templates, their revisions, triggers and runs.
 * Part of the Storage contract (storage.ts re-exports everything here).
 */
import type { EnvBinding } from '../services/bindings.js'
import type { IssuePriority } from '../records.js'
export type { EnvBinding } from '../services/bindings.js'

export type RoutineStatus = 'active' | 'paused' | 'archived'
export type ConcurrencyPolicy = 'coalesce_if_active' | 'always_enqueue' | 'skip_if_active'
export type CatchUpPolicy = 'skip_missed' | 'enqueue_missed_with_cap'
export type RoutineVariableType = 'text' | 'textarea' | 'number' | 'boolean' | 'select'

export interface RoutineVariable {
  name: string
  label: string | null
  type: RoutineVariableType
  defaultValue: string | number | boolean | null
  required: boolean
  /** The choices of a `select`; null for every other type. */
  options: string[] | null
}

/** The fields of a routine a revision captures and a restore brings back. */
export interface RoutineContent {
  title: string
  description: string | null
  projectId: string | null
  goalId: string | null
  parentIssueId: string | null
  assigneeAgentId: string | null
  priority: IssuePriority
  status: RoutineStatus
  concurrencyPolicy: ConcurrencyPolicy
  catchUpPolicy: CatchUpPolicy
  variables: RoutineVariable[]
  env: Record<string, EnvBinding>
}

export interface Routine extends RoutineContent {
  id: string
  squadId: string
  /** The latest revision: PATCH with a stale `baseRevisionId` answers 409 revision_conflict. */
  revisionId: string
  revisionNumber: number
  createdAt: Date
  updatedAt: Date
}

export type NewRoutine = Omit<Routine, 'createdAt' | 'updatedAt'>
export type RoutinePatch = Partial<RoutineContent> & { revisionId?: string; revisionNumber?: number }

/** A trigger as a revision snapshot shows it: never a secret, hash or ciphertext. */
export interface TriggerSnapshot {
  id: string
  kind: TriggerKind
  label: string | null
  enabled: boolean
  cronExpression: string | null
  timezone: string | null
  signingMode: SigningMode | null
  replayWindowSec: number | null
  publicId: string | null
}

export interface RoutineRevision {
  id: string
  routineId: string
  squadId: string
  /** 1 for the creation, then one more per change. */
  number: number
  /** What made it: `created`, `updated`, `restored`, `trigger_created`, `trigger_updated`, `trigger_deleted`, `secret_rotated`. */
  change: string
  snapshot: RoutineContent & { triggers: TriggerSnapshot[] }
  actorType: string
  actorId: string
  createdAt: Date
}

export type TriggerKind = 'schedule' | 'webhook' | 'api'
export type SigningMode = 'bearer' | 'hmac_sha256' | 'vcs_hmac' | 'none'

export interface RoutineTrigger {
  id: string
  squadId: string
  routineId: string
  kind: TriggerKind
  label: string | null
  enabled: boolean
  /** schedule: five-field cron and IANA zone; the next due time, stored so any node can claim it. */
  cronExpression: string | null
  timezone: string | null
  nextFireAt: Date | null
  /** webhook and api (always `bearer`). */
  signingMode: SigningMode | null
  replayWindowSec: number | null
  /** Unguessable id of the public fire URL (webhook and api). */
  publicId: string | null
  /** SHA-256 of a bearer secret (the secret itself is never stored). */
  secretHash: string | null
  /** An HMAC secret as a MasterKey envelope (it is needed again to check each signature). */
  secretCiphertext: string | null
  secretRotatedAt: Date | null
  lastFiredAt: Date | null
  createdAt: Date
  updatedAt: Date
}

export type NewRoutineTrigger = Omit<RoutineTrigger, 'createdAt' | 'updatedAt' | 'lastFiredAt'>
export type RoutineTriggerPatch = Partial<
  Pick<RoutineTrigger, 'label' | 'enabled' | 'cronExpression' | 'timezone' | 'nextFireAt' | 'signingMode' | 'replayWindowSec' | 'secretHash' | 'secretCiphertext' | 'secretRotatedAt' | 'lastFiredAt'>
>

export type RoutineRunSource = 'manual' | 'api' | 'webhook' | 'schedule'
/**
 * `queued` (a schedule run waiting for its job), then `issue_created`, `coalesced` or `skipped`
 * (linked to the active run, no issue), or `failed` (with `error`).
 */
export type RoutineRunStatus = 'queued' | 'issue_created' | 'coalesced' | 'skipped' | 'failed'

export interface RoutineRun {
  id: string
  squadId: string
  routineId: string
  triggerId: string | null
  source: RoutineRunSource
  status: RoutineRunStatus
  /** The due time a schedule run is for; unique per trigger, so a due time fires once. */
  scheduledFor: Date | null
  idempotencyKey: string | null
  variables: Record<string, string | number | boolean>
  payload: Record<string, unknown> | null
  /** Run request overrides, kept for a queued run until it executes. */
  projectId: string | null
  assigneeAgentId: string | null
  issueId: string | null
  linkedRunId: string | null
  error: string | null
  createdAt: Date
  finishedAt: Date | null
}

export type NewRoutineRun = Omit<RoutineRun, 'createdAt' | 'finishedAt'> & { finishedAt?: Date | null }
export type RoutineRunPatch = Partial<Pick<RoutineRun, 'status' | 'variables' | 'issueId' | 'linkedRunId' | 'error' | 'finishedAt' | 'payload'>>

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
  /** The trigger of a public URL, with its routine's concurrency policy (to pick the lock a fire takes). */
  getTriggerByPublicId(publicId: string): Promise<{ trigger: RoutineTrigger; concurrencyPolicy: ConcurrencyPolicy } | undefined>
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
}
