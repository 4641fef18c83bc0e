import { Type, type Static } from '@sinclair/typebox'
import { ActivityEntryRecord, type ActivityEntry } from '../records.js'
import { Nullable, Uuid, iso } from './common.js'

// The actor type is documented as a plain string, as it always was.
export const ActivitySchema = Type.Object({ ...ActivityEntryRecord.properties, actorType: Type.String() }, { $id: 'ActivityEntry', title: 'ActivityEntry' })
export const ActivityQuery = Type.Object({
  agentId: Type.Optional(Type.String({ maxLength: 64 })),
  entityType: Type.Optional(Type.String({ maxLength: 100 })),
  entityId: Type.Optional(Type.String({ maxLength: 200 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, default: 100 })),
})

export const CreateActivityBody = Type.Object(
  {
    actorId: Type.String({ minLength: 1, maxLength: 200 }),
    action: Type.String({ minLength: 1, maxLength: 200, pattern: '^[a-z0-9_]+(\\.[a-z0-9_]+)*$' }),
    entityType: Type.String({ minLength: 1, maxLength: 100 }),
    entityId: Type.String({ minLength: 1, maxLength: 200 }),
    actorType: Type.Optional(ActivityEntryRecord.properties.actorType),
    agentId: Type.Optional(Nullable(Uuid)),
    details: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown(), { maxProperties: 100 }))),
  },
  { additionalProperties: false },
)

export const presentActivity = (a: ActivityEntry): Static<typeof ActivitySchema> => ({ ...a, createdAt: iso(a.createdAt) })
