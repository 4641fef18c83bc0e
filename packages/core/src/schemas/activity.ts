import { Type } from '@sinclair/typebox'
import type { ActivityEntry } from '../records.js'
import { Nullable, Timestamp, Uuid, iso } from './common.js'

export const ActivitySchema = Type.Object(
  {
    id: Uuid,
    squadId: Uuid,
    actorType: Type.String(),
    actorId: Type.String(),
    action: Type.String(),
    entityType: Type.String(),
    entityId: Type.String(),
    agentId: Nullable(Uuid),
    runId: Nullable(Uuid),
    details: Nullable(Type.Record(Type.String(), Type.Unknown())),
    createdAt: Timestamp,
  },
  { $id: 'ActivityEntry', title: 'ActivityEntry' },
)
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
    actorType: Type.Optional(Type.Union([Type.Literal('agent'), Type.Literal('user'), Type.Literal('system'), Type.Literal('plugin')])),
    agentId: Type.Optional(Nullable(Uuid)),
    details: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown(), { maxProperties: 100 }))),
  },
  { additionalProperties: false },
)

export const presentActivity = (a: ActivityEntry) => ({ ...a, createdAt: iso(a.createdAt) })
