import { Type, type StaticDecode } from '@sinclair/typebox'
import { DateTime, JsonObject, Nullable, OneOf, Uuid } from './fields.js'

export const squadStatuses = ['active', 'archived'] as const
export type SquadStatus = (typeof squadStatuses)[number]

export const SquadRecord = Type.Object({
  id: Uuid,
  name: Type.String(),
  slug: Type.String(),
  status: OneOf(squadStatuses),
  issuePrefix: Type.String(),
  budgetMonthlyCents: Nullable(Type.Integer()),
  budgetHardStop: Type.Boolean(),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type Squad = StaticDecode<typeof SquadRecord>

export const agentStatuses = ['active', 'paused', 'terminated', 'running', 'error'] as const
export type AgentStatus = (typeof agentStatuses)[number]

export const AgentRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  name: Type.String(),
  role: Type.String(),
  title: Nullable(Type.String()),
  status: OneOf(agentStatuses),
  adapterType: Type.String(),
  reportsToAgentId: Nullable(Uuid),
  prompt: Nullable(Type.String()),
  desiredSkills: Type.Array(Type.String()),
  permissions: JsonObject(),
  instructionsPath: Nullable(Type.String()),
  runtimeState: JsonObject(),
  budgetMonthlyCents: Nullable(Type.Integer()),
  pauseReason: Nullable(Type.String()),
  /** How the agent's adapter reaches it (operator only: never shown to agents, activity or the tower). */
  adapterConfig: JsonObject(),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type Agent = StaticDecode<typeof AgentRecord>

export const ApiKeyRecord = Type.Object({
  id: Uuid,
  kind: OneOf(['operator', 'agent']),
  name: Type.String(),
  agentId: Nullable(Uuid),
  squadId: Nullable(Uuid),
  tokenHash: Type.String(),
  createdAt: DateTime,
  expiresAt: Nullable(DateTime),
  revokedAt: Nullable(DateTime),
  lastUsedAt: Nullable(DateTime),
})
export type ApiKeyRecord = StaticDecode<typeof ApiKeyRecord>
