import { Type } from '@sinclair/typebox'
import type { Routine, RoutineRevision, RoutineRun, RoutineTrigger } from '../contracts/routines.js'
import { Nullable, Timestamp, Uuid, iso, isoOrNull } from './common.js'
import { IssuePriority } from './issues.js'
import { RoutineTriggerSchema, presentTrigger } from './routine-triggers.js'

const RoutineStatus = Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('archived')])
const ConcurrencyPolicy = Type.Union([Type.Literal('coalesce_if_active'), Type.Literal('always_enqueue'), Type.Literal('skip_if_active')])
const CatchUpPolicy = Type.Union([Type.Literal('skip_missed'), Type.Literal('enqueue_missed_with_cap')])
const VariableType = Type.Union([Type.Literal('text'), Type.Literal('textarea'), Type.Literal('number'), Type.Literal('boolean'), Type.Literal('select')])
const VariableValue = Type.Union([Type.String({ maxLength: 100_000 }), Type.Number(), Type.Boolean()])

/** A variable definition; the service checks the rules that span fields (options only on select, default of the right type). */
export const RoutineVariableInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64 }),
    label: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    type: Type.Optional(VariableType),
    defaultValue: Type.Optional(Nullable(VariableValue)),
    required: Type.Optional(Type.Boolean()),
    options: Type.Optional(Nullable(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 100 }))),
  },
  { additionalProperties: false },
)

export const RoutineVariableSchema = Type.Object({
  name: Type.String(),
  label: Nullable(Type.String()),
  type: VariableType,
  defaultValue: Nullable(VariableValue),
  required: Type.Boolean(),
  options: Nullable(Type.Array(Type.String())),
})

/** DECISIONS section 4: a string, `{type:'plain', value}` or `{type:'secret_ref', secretId, version}`. */
export const EnvBindingSchema = Type.Union([
  Type.String({ maxLength: 10_000 }),
  Type.Object({ type: Type.Literal('plain'), value: Type.String({ maxLength: 10_000 }) }, { additionalProperties: false }),
  Type.Object(
    { type: Type.Literal('secret_ref'), secretId: Uuid, version: Type.Union([Type.Literal('latest'), Type.Integer({ minimum: 1 })]) },
    { additionalProperties: false },
  ),
])
const Env = Type.Record(Type.String({ minLength: 1, maxLength: 128 }), EnvBindingSchema, { maxProperties: 100 })

const routineFields = {
  description: Type.Optional(Nullable(Type.String({ maxLength: 100_000 }))),
  projectId: Type.Optional(Nullable(Uuid)),
  goalId: Type.Optional(Nullable(Uuid)),
  parentIssueId: Type.Optional(Nullable(Uuid)),
  assigneeAgentId: Type.Optional(Nullable(Uuid)),
  priority: Type.Optional(IssuePriority),
  status: Type.Optional(RoutineStatus),
  concurrencyPolicy: Type.Optional(ConcurrencyPolicy),
  catchUpPolicy: Type.Optional(CatchUpPolicy),
  variables: Type.Optional(Type.Array(RoutineVariableInput, { maxItems: 50 })),
  env: Type.Optional(Env),
}

export const CreateRoutineBody = Type.Object({ title: Type.String({ minLength: 1, maxLength: 200 }), ...routineFields }, { additionalProperties: false })
export const UpdateRoutineBody = Type.Object(
  { title: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), ...routineFields, baseRevisionId: Type.Optional(Uuid) },
  { additionalProperties: false },
)

const contentProperties = {
  title: Type.String(),
  description: Nullable(Type.String()),
  projectId: Nullable(Uuid),
  goalId: Nullable(Uuid),
  parentIssueId: Nullable(Uuid),
  assigneeAgentId: Nullable(Uuid),
  priority: IssuePriority,
  status: RoutineStatus,
  concurrencyPolicy: ConcurrencyPolicy,
  catchUpPolicy: CatchUpPolicy,
  variables: Type.Array(RoutineVariableSchema),
  env: Type.Record(Type.String(), EnvBindingSchema),
}

export const RoutineSchema = Type.Object(
  {
    id: Uuid,
    squadId: Uuid,
    ...contentProperties,
    revisionId: Uuid,
    revisionNumber: Type.Integer(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Routine', title: 'Routine' },
)

export const RoutineListItem = Type.Object({
  id: Uuid,
  title: Type.String(),
  status: RoutineStatus,
  assigneeAgentId: Nullable(Uuid),
  projectId: Nullable(Uuid),
  concurrencyPolicy: ConcurrencyPolicy,
  catchUpPolicy: CatchUpPolicy,
  revisionNumber: Type.Integer(),
  updatedAt: Timestamp,
})

const TriggerSnapshotSchema = Type.Object({
  id: Uuid,
  kind: Type.String(),
  label: Nullable(Type.String()),
  enabled: Type.Boolean(),
  cronExpression: Nullable(Type.String()),
  timezone: Nullable(Type.String()),
  signingMode: Nullable(Type.String()),
  replayWindowSec: Nullable(Type.Integer()),
  publicId: Nullable(Type.String()),
})

export const RoutineRevisionSchema = Type.Object(
  {
    id: Uuid,
    routineId: Uuid,
    number: Type.Integer(),
    change: Type.String(),
    snapshot: Type.Object({ ...contentProperties, triggers: Type.Array(TriggerSnapshotSchema) }),
    actorType: Type.String(),
    actorId: Type.String(),
    createdAt: Timestamp,
  },
  { $id: 'RoutineRevision', title: 'RoutineRevision' },
)

const RunStatus = Type.Union(['queued', 'issue_created', 'coalesced', 'skipped', 'failed'].map((s) => Type.Literal(s)))
const RunSource = Type.Union(['manual', 'api', 'webhook', 'schedule'].map((s) => Type.Literal(s)))

export const RoutineRunSchema = Type.Object(
  {
    id: Uuid,
    routineId: Uuid,
    triggerId: Nullable(Uuid),
    source: RunSource,
    status: RunStatus,
    scheduledFor: Nullable(Timestamp),
    idempotencyKey: Nullable(Type.String()),
    variables: Type.Record(Type.String(), VariableValue),
    issueId: Nullable(Uuid),
    linkedRunId: Nullable(Uuid),
    error: Nullable(Type.String()),
    createdAt: Timestamp,
    finishedAt: Nullable(Timestamp),
  },
  { $id: 'RoutineRun', title: 'RoutineRun' },
)

export const RunRoutineBody = Type.Object(
  {
    triggerId: Type.Optional(Uuid),
    payload: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { maxProperties: 1000 })),
    variables: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { maxProperties: 100 })),
    projectId: Type.Optional(Nullable(Uuid)),
    assigneeAgentId: Type.Optional(Nullable(Uuid)),
    idempotencyKey: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    source: Type.Optional(Type.Union([Type.Literal('manual'), Type.Literal('api')])),
  },
  { additionalProperties: false },
)

export const RevisionParams = Type.Object({ id: Type.String({ maxLength: 200 }), revisionId: Type.String({ maxLength: 200 }) })
export const ListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
})

export const RoutineWithTriggersSchema = Type.Object({ routine: RoutineSchema, triggers: Type.Array(RoutineTriggerSchema) })

export const presentRoutine = (r: Routine) => ({ ...r, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt) })
export const presentRoutineListItem = (r: Routine) => ({
  id: r.id,
  title: r.title,
  status: r.status,
  assigneeAgentId: r.assigneeAgentId,
  projectId: r.projectId,
  concurrencyPolicy: r.concurrencyPolicy,
  catchUpPolicy: r.catchUpPolicy,
  revisionNumber: r.revisionNumber,
  updatedAt: iso(r.updatedAt),
})
export const presentRevision = (r: RoutineRevision) => ({
  id: r.id,
  routineId: r.routineId,
  number: r.number,
  change: r.change,
  snapshot: r.snapshot,
  actorType: r.actorType,
  actorId: r.actorId,
  createdAt: iso(r.createdAt),
})
export const presentRun = (r: RoutineRun) => ({
  id: r.id,
  routineId: r.routineId,
  triggerId: r.triggerId,
  source: r.source,
  status: r.status,
  scheduledFor: isoOrNull(r.scheduledFor),
  idempotencyKey: r.idempotencyKey,
  variables: r.variables,
  issueId: r.issueId,
  linkedRunId: r.linkedRunId,
  error: r.error,
  createdAt: iso(r.createdAt),
  finishedAt: isoOrNull(r.finishedAt),
})
export const presentRoutineWithTriggers = (x: { routine: Routine; triggers: RoutineTrigger[] }) => ({ routine: presentRoutine(x.routine), triggers: x.triggers.map(presentTrigger) })
