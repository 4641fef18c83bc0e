import { Type, type Static, type StaticDecode } from '@sinclair/typebox'
import { DateTime, JsonObject, Nullable, OneOf, Uuid } from './fields.js'
import { issuePriorities } from './issues.js'

// Records of routines: recurring issue templates, their revisions, triggers and runs.

export const routineStatuses = ['active', 'paused', 'archived'] as const
export type RoutineStatus = (typeof routineStatuses)[number]
export const concurrencyPolicies = ['coalesce_if_active', 'always_enqueue', 'skip_if_active'] as const
export type ConcurrencyPolicy = (typeof concurrencyPolicies)[number]
export const catchUpPolicies = ['skip_missed', 'enqueue_missed_with_cap'] as const
export type CatchUpPolicy = (typeof catchUpPolicies)[number]
export const routineVariableTypes = ['text', 'textarea', 'number', 'boolean', 'select'] as const
export type RoutineVariableType = (typeof routineVariableTypes)[number]

/** A variable's value (and a run's variables): text, a number or a boolean. */
export const VariableValue = Type.Union([Type.String({ maxLength: 100_000 }), Type.Number(), Type.Boolean()])

export const RoutineVariableRecord = Type.Object({
  name: Type.String(),
  label: Nullable(Type.String()),
  type: OneOf(routineVariableTypes),
  defaultValue: Nullable(VariableValue),
  required: Type.Boolean(),
  /** The choices of a `select`; null for every other type. */
  options: Nullable(Type.Array(Type.String())),
})
export type RoutineVariable = StaticDecode<typeof RoutineVariableRecord>

/**
 * An env binding (agent `adapterConfig.env`, routine `env`), docs/secrets.md (Bindings and resolve): a plain string,
 * `{type:'plain', value}` or `{type:'secret_ref', secretId, version}`.
 */
export const EnvBindingSchema = Type.Union([
  Type.String({ maxLength: 10_000 }),
  Type.Object({ type: Type.Literal('plain'), value: Type.String({ maxLength: 10_000 }) }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('secret_ref'), secretId: Uuid, version: Type.Union([Type.Literal('latest'), Type.Integer({ minimum: 1 })]) }, { additionalProperties: false }),
])
export type EnvBinding = Static<typeof EnvBindingSchema>

/** Who wrote a routine's env: the trust it gets in an agent's environment follows from it. */
export const envWriters = ['operator', 'agent'] as const
export type EnvWriter = (typeof envWriters)[number]

/** The fields of a routine a revision captures and a restore brings back. */
export const RoutineContentRecord = Type.Object({
  title: Type.String(),
  description: Nullable(Type.String()),
  projectId: Nullable(Uuid),
  goalId: Nullable(Uuid),
  parentIssueId: Nullable(Uuid),
  assigneeAgentId: Nullable(Uuid),
  priority: OneOf(issuePriorities),
  status: OneOf(routineStatuses),
  concurrencyPolicy: OneOf(concurrencyPolicies),
  catchUpPolicy: OneOf(catchUpPolicies),
  variables: Type.Array(RoutineVariableRecord),
  env: Type.Record(Type.String(), EnvBindingSchema),
})
export type RoutineContent = StaticDecode<typeof RoutineContentRecord>

export const RoutineRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  ...RoutineContentRecord.properties,
  /** The agent whose key created the routine; null when an Operator (or the system) did. Agent keys change only routines they created. */
  createdByAgentId: Nullable(Uuid),
  /** Who wrote `env` last: an Operator's env may load code and bind secrets, an agent's may not (docs/security.md). */
  envWrittenBy: OneOf(envWriters),
  /** The latest revision: PATCH with a stale `baseRevisionId` answers 409 revision_conflict. */
  revisionId: Uuid,
  revisionNumber: Type.Integer(),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type Routine = StaticDecode<typeof RoutineRecord>

export const triggerKinds = ['schedule', 'webhook', 'api'] as const
export type TriggerKind = (typeof triggerKinds)[number]
export const signingModes = ['bearer', 'hmac_sha256', 'vcs_hmac', 'none'] as const
export type SigningMode = (typeof signingModes)[number]

/** A trigger as a revision snapshot shows it: never a secret, hash or ciphertext. */
export const TriggerSnapshotRecord = Type.Object({
  id: Uuid,
  kind: OneOf(triggerKinds),
  label: Nullable(Type.String()),
  enabled: Type.Boolean(),
  cronExpression: Nullable(Type.String()),
  timezone: Nullable(Type.String()),
  signingMode: Nullable(OneOf(signingModes)),
  replayWindowSec: Nullable(Type.Integer()),
  publicId: Nullable(Type.String()),
})
export type TriggerSnapshot = StaticDecode<typeof TriggerSnapshotRecord>

export const RoutineRevisionRecord = Type.Object({
  id: Uuid,
  routineId: Uuid,
  squadId: Uuid,
  /** 1 for the creation, then one more per change. */
  number: Type.Integer(),
  /** What made it: `created`, `updated`, `restored`, `trigger_created`, `trigger_updated`, `trigger_deleted`, `secret_rotated`. */
  change: Type.String(),
  snapshot: Type.Object({ ...RoutineContentRecord.properties, triggers: Type.Array(TriggerSnapshotRecord) }),
  actorType: Type.String(),
  actorId: Type.String(),
  createdAt: DateTime,
})
export type RoutineRevision = StaticDecode<typeof RoutineRevisionRecord>

export const RoutineTriggerRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  routineId: Uuid,
  kind: OneOf(triggerKinds),
  label: Nullable(Type.String()),
  enabled: Type.Boolean(),
  /** schedule: five-field cron and IANA zone; the next due time, stored so any node can claim it. */
  cronExpression: Nullable(Type.String()),
  timezone: Nullable(Type.String()),
  nextFireAt: Nullable(DateTime),
  /** webhook and api (always `bearer`). */
  signingMode: Nullable(OneOf(signingModes)),
  replayWindowSec: Nullable(Type.Integer()),
  /** Unguessable id of the public fire URL (webhook and api). */
  publicId: Nullable(Type.String()),
  /** SHA-256 of a bearer secret (the secret itself is never stored). */
  secretHash: Nullable(Type.String()),
  /** An HMAC secret as a MasterKey envelope (it is needed again to check each signature). */
  secretCiphertext: Nullable(Type.String()),
  secretRotatedAt: Nullable(DateTime),
  lastFiredAt: Nullable(DateTime),
  /** The agent whose key added the trigger; null when an Operator did (agents may not change those). */
  createdByAgentId: Nullable(Uuid),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type RoutineTrigger = StaticDecode<typeof RoutineTriggerRecord>

export const routineRunSources = ['manual', 'api', 'webhook', 'schedule'] as const
export type RoutineRunSource = (typeof routineRunSources)[number]
/**
 * `queued` (a schedule run waiting for its job), then `issue_created`, `coalesced` or `skipped`
 * (linked to the active run, no issue), or `failed` (with `error`).
 */
export const routineRunStatuses = ['queued', 'issue_created', 'coalesced', 'skipped', 'failed'] as const
export type RoutineRunStatus = (typeof routineRunStatuses)[number]

export const RoutineRunRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  routineId: Uuid,
  triggerId: Nullable(Uuid),
  source: OneOf(routineRunSources),
  status: OneOf(routineRunStatuses),
  /** The due time a schedule run is for; unique per trigger, so a due time fires once. */
  scheduledFor: Nullable(DateTime),
  idempotencyKey: Nullable(Type.String()),
  variables: Type.Record(Type.String(), VariableValue),
  payload: Nullable(JsonObject()),
  /** Run request overrides, kept for a queued run until it executes. */
  projectId: Nullable(Uuid),
  assigneeAgentId: Nullable(Uuid),
  /** The agent whose key asked for a manual or API run; null for an Operator, a trigger or the scheduler. */
  requestedByAgentId: Nullable(Uuid),
  issueId: Nullable(Uuid),
  linkedRunId: Nullable(Uuid),
  error: Nullable(Type.String()),
  createdAt: DateTime,
  finishedAt: Nullable(DateTime),
})
export type RoutineRun = StaticDecode<typeof RoutineRunRecord>
