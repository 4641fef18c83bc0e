import { Type } from '@sinclair/typebox'
import type { Agent, ApiKeyRecord } from '../records.js'
import { Nullable, Timestamp, Uuid, iso, isoOrNull } from './common.js'

const AgentStatus = Type.Union(['active', 'paused', 'terminated', 'running', 'error'].map((s) => Type.Literal(s)))

export const AgentSchema = Type.Object(
  {
    id: Uuid,
    squadId: Uuid,
    name: Type.String(),
    role: Type.String(),
    title: Nullable(Type.String()),
    status: AgentStatus,
    adapterType: Type.String(),
    reportsToAgentId: Nullable(Uuid),
    prompt: Nullable(Type.String()),
    desiredSkills: Type.Array(Type.String()),
    permissions: Type.Record(Type.String(), Type.Unknown()),
    instructionsPath: Nullable(Type.String()),
    budgetMonthlyCents: Nullable(Type.Integer()),
    pauseReason: Nullable(Type.String()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Agent', title: 'Agent' },
)

/**
 * What another agent sees of an agent: the fields SERVICE-SPEC shows for GET /api/agents/{id}.
 * Prompt, permissions, instructions path and budget are for the agent itself and the Operator.
 */
export const AgentPeerSchema = Type.Object(
  { id: Uuid, squadId: Uuid, name: Type.String(), role: Type.String(), title: Nullable(Type.String()), status: AgentStatus, adapterType: Type.String() },
  { $id: 'AgentPeer', title: 'AgentPeer', additionalProperties: false },
)
export const presentAgentPeer = (a: Agent) => ({ id: a.id, squadId: a.squadId, name: a.name, role: a.role, title: a.title, status: a.status, adapterType: a.adapterType })

export const AgentListItem = Type.Object({ id: Uuid, name: Type.String(), role: Type.String(), title: Nullable(Type.String()), status: AgentStatus, reportsToAgentId: Nullable(Uuid) })

export const ChainLink = Type.Object({ id: Uuid, name: Type.String(), role: Type.String() })
export const AgentMe = Type.Object({
  id: Uuid,
  name: Type.String(),
  role: Type.String(),
  title: Nullable(Type.String()),
  squadId: Uuid,
  status: AgentStatus,
  chainOfCommand: Type.Array(ChainLink),
})

export const CreateAgentBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    role: Type.String({ minLength: 1, maxLength: 100 }),
    adapterType: Type.String({ minLength: 1, maxLength: 100 }),
    title: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    reportsToAgentId: Type.Optional(Nullable(Uuid)),
    prompt: Type.Optional(Nullable(Type.String({ maxLength: 100_000 }))),
    desiredSkills: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 100 })),
  },
  { additionalProperties: false },
)

export const UpdateAgentBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    title: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    prompt: Type.Optional(Nullable(Type.String({ maxLength: 100_000 }))),
    status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('paused')])),
  },
  { additionalProperties: false },
)

export const PermissionsBody = Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { maxProperties: 100 })
export const InstructionsPathBody = Type.Object({ instructionsPath: Type.String({ minLength: 1, maxLength: 1000 }) }, { additionalProperties: false })

export const RuntimeState = Type.Object({
  agentId: Uuid,
  status: AgentStatus,
  pauseReason: Nullable(Type.String()),
  state: Type.Record(Type.String(), Type.Unknown()),
  updatedAt: Timestamp,
})

export const KeySchema = Type.Object({ id: Uuid, name: Type.String(), createdAt: Timestamp, expiresAt: Nullable(Timestamp) }, { $id: 'ApiKey', title: 'ApiKey' })
export const CreateKeyBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }), expiresAt: Type.Optional(Type.String({ format: 'date-time' })) },
  { additionalProperties: false },
)

export const presentAgent = (a: Agent) => ({
  id: a.id,
  squadId: a.squadId,
  name: a.name,
  role: a.role,
  title: a.title,
  status: a.status,
  adapterType: a.adapterType,
  reportsToAgentId: a.reportsToAgentId,
  prompt: a.prompt,
  desiredSkills: a.desiredSkills,
  permissions: a.permissions,
  instructionsPath: a.instructionsPath,
  budgetMonthlyCents: a.budgetMonthlyCents,
  pauseReason: a.pauseReason,
  createdAt: iso(a.createdAt),
  updatedAt: iso(a.updatedAt),
})

export const presentKey = (k: ApiKeyRecord) => ({ id: k.id, name: k.name, createdAt: iso(k.createdAt), expiresAt: isoOrNull(k.expiresAt) })
