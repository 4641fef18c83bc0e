import { Type, type Static } from '@sinclair/typebox'
import {
  EnvBindingSchema,
  RoutineContentRecord,
  RoutineRecord,
  RoutineRevisionRecord,
  RoutineRunRecord,
  RoutineVariableRecord,
  TriggerSnapshotRecord,
  VariableValue,
  type Routine,
  type RoutineRevision,
  type RoutineRun,
  type RoutineTrigger,
} from '../contracts/routines.js'
import { Nullable, Uuid, iso, isoOrNull } from './common.js'
import { IssuePriority } from './issues.js'
import { RoutineTriggerSchema, presentTrigger } from './routine-triggers.js'

const { status: RoutineStatus, concurrencyPolicy: ConcurrencyPolicy, catchUpPolicy: CatchUpPolicy } = RoutineContentRecord.properties
const VariableType = RoutineVariableRecord.properties.type

/** A variable definition; the service checks the rules that span fields (options only on select, default of the right type). */
const RoutineVariableInput = Type.Object(
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

export const RoutineSchema = Type.Object(RoutineRecord.properties, { $id: 'Routine', title: 'Routine' })

export const RoutineListItem = Type.Object(
  Type.Pick(RoutineRecord, ['id', 'title', 'status', 'assigneeAgentId', 'projectId', 'concurrencyPolicy', 'catchUpPolicy', 'revisionNumber', 'updatedAt']).properties,
  { $id: 'RoutineSummary', title: 'RoutineSummary' },
)

// Kind and signing mode are documented as plain strings in snapshots, as they always were.
const TriggerSnapshotSchema = Type.Object({ ...TriggerSnapshotRecord.properties, kind: Type.String(), signingMode: Nullable(Type.String()) })

export const RoutineRevisionSchema = Type.Object(
  {
    ...Type.Omit(RoutineRevisionRecord, ['squadId']).properties,
    snapshot: Type.Object({ ...RoutineContentRecord.properties, triggers: Type.Array(TriggerSnapshotSchema) }),
  },
  { $id: 'RoutineRevision', title: 'RoutineRevision' },
)

// A run's payload and request overrides are the engine's.
export const RoutineRunSchema = Type.Object(Type.Omit(RoutineRunRecord, ['squadId', 'payload', 'projectId', 'assigneeAgentId', 'requestedByAgentId']).properties, {
  $id: 'RoutineRun',
  title: 'RoutineRun',
})

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

const presentRoutine = (r: Routine): Static<typeof RoutineSchema> => ({ ...r, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt) })
export const presentRoutineListItem = (r: Routine): Static<typeof RoutineListItem> => ({
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
export const presentRevision = (r: RoutineRevision): Static<typeof RoutineRevisionSchema> => ({
  id: r.id,
  routineId: r.routineId,
  number: r.number,
  change: r.change,
  snapshot: r.snapshot,
  actorType: r.actorType,
  actorId: r.actorId,
  createdAt: iso(r.createdAt),
})
export const presentRun = (r: RoutineRun): Static<typeof RoutineRunSchema> => ({
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
