import { Type, type StaticDecode } from '@sinclair/typebox'
import { DateTime, JsonObject, Nullable, OneOf, Uuid } from './fields.js'

export const jobStatuses = ['queued', 'running', 'completed', 'failed'] as const
export type JobStatus = (typeof jobStatuses)[number]

export const JobRecord = Type.Object({
  id: Uuid,
  kind: Type.String(),
  squadId: Nullable(Uuid),
  payload: JsonObject(),
  status: OneOf(jobStatuses),
  attempts: Type.Integer(),
  /** After this many attempts a failing job stays `failed`. */
  maxAttempts: Type.Integer(),
  /** Unique among unfinished jobs of the same kind, when set. */
  dedupeKey: Nullable(Type.String()),
  runAt: DateTime,
  lockedBy: Nullable(Type.String()),
  lockedUntil: Nullable(DateTime),
  result: Nullable(JsonObject()),
  error: Nullable(Type.String()),
  createdAt: DateTime,
  finishedAt: Nullable(DateTime),
})
export type Job = StaticDecode<typeof JobRecord>

export const AgentWakeupRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  agentId: Uuid,
  issueId: Nullable(Uuid),
  reason: Type.String(),
  status: OneOf(['queued', 'delivered', 'dropped']),
  createdAt: DateTime,
})
export type AgentWakeup = StaticDecode<typeof AgentWakeupRecord>
