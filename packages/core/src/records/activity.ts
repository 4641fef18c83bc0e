import { Type, type StaticDecode } from '@sinclair/typebox'
import { DateTime, JsonObject, Nullable, OneOf, Uuid } from './fields.js'

export const actorTypes = ['agent', 'user', 'system', 'plugin'] as const
export type ActorType = (typeof actorTypes)[number]

export const ActivityEntryRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  actorType: OneOf(actorTypes),
  actorId: Type.String(),
  action: Type.String(),
  entityType: Type.String(),
  entityId: Type.String(),
  agentId: Nullable(Uuid),
  runId: Nullable(Uuid),
  details: Nullable(JsonObject()),
  createdAt: DateTime,
})
export type ActivityEntry = StaticDecode<typeof ActivityEntryRecord>

/** A row of the transactional outbox the tower client drains; `seq` orders everything. */
export const OutboxEntryRecord = Type.Object({
  seq: Type.String(),
  kind: OneOf(['upsert', 'fact']),
  entityType: Type.String(),
  entityId: Type.String(),
  squadId: Nullable(Uuid),
  payload: JsonObject(),
  createdAt: DateTime,
})
export type OutboxEntry = StaticDecode<typeof OutboxEntryRecord>

/** An outbox row as a change writes it: the storage numbers it (`seq`) and stamps it. */
export type NewOutboxEntry = Omit<OutboxEntry, 'seq' | 'createdAt'>
