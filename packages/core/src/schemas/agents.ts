import { Type } from '@sinclair/typebox'
import { AgentRecord, ApiKeyRecord, type Agent } from '../records.js'
import { Nullable, Uuid, iso, isoOrNull } from './common.js'

// The runtime state has its own endpoint (RuntimeStateSchema).
const agentFields = Type.Omit(AgentRecord, ['runtimeState']).properties
export const AgentSchema = Type.Object(
  {
    ...agentFields,
    /** Operator only: never shown to an agent key. */
    adapterConfig: Type.Optional(agentFields.adapterConfig),
  },
  { $id: 'Agent', title: 'Agent' },
)

/**
 * What another agent sees of an agent: its public fields on GET /api/agents/{id} (docs/authorization.md).
 * Prompt, permissions, instructions path and budget are for the agent itself and the Operator.
 */
export const AgentPeerSchema = Type.Object(Type.Pick(AgentRecord, ['id', 'squadId', 'name', 'role', 'title', 'status', 'adapterType']).properties, {
  $id: 'AgentPeer',
  title: 'AgentPeer',
  additionalProperties: false,
})
export const presentAgentPeer = (a: Agent) => ({ id: a.id, squadId: a.squadId, name: a.name, role: a.role, title: a.title, status: a.status, adapterType: a.adapterType })

export const AgentListItem = Type.Object(Type.Pick(AgentRecord, ['id', 'name', 'role', 'title', 'status', 'reportsToAgentId']).properties, { $id: 'AgentSummary', title: 'AgentSummary' })

const ChainLink = Type.Object(Type.Pick(AgentRecord, ['id', 'name', 'role']).properties, { $id: 'ChainLink', title: 'ChainLink' })
export const AgentMe = Type.Object(
  {
    ...Type.Pick(AgentRecord, ['id', 'name', 'role', 'title', 'squadId', 'status']).properties,
    chainOfCommand: Type.Array(ChainLink),
  },
  { $id: 'AgentMe', title: 'AgentMe' },
)

/** The adapter's settings (docs/heartbeats.md: adapterConfig); checked by the service and the adapter's validateConfig. */
const AdapterConfig = Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { maxProperties: 100 })

export const CreateAgentBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    role: Type.String({ minLength: 1, maxLength: 100 }),
    adapterType: Type.String({ minLength: 1, maxLength: 100 }),
    title: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    reportsToAgentId: Type.Optional(Nullable(Uuid)),
    prompt: Type.Optional(Nullable(Type.String({ maxLength: 100_000 }))),
    desiredSkills: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 100 })),
    adapterConfig: Type.Optional(AdapterConfig),
  },
  { additionalProperties: false },
)

export const UpdateAgentBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    title: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    prompt: Type.Optional(Nullable(Type.String({ maxLength: 100_000 }))),
    status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('paused')])),
    adapterConfig: Type.Optional(AdapterConfig),
    replaceAdapterConfig: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)

export const PermissionsBody = Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { maxProperties: 100 })
export const InstructionsPathBody = Type.Object({ instructionsPath: Type.String({ minLength: 1, maxLength: 1000 }) }, { additionalProperties: false })

export const KeySchema = Type.Object(Type.Pick(ApiKeyRecord, ['id', 'name', 'createdAt', 'expiresAt']).properties, { $id: 'ApiKey', title: 'ApiKey' })
export const CreateKeyBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }), expiresAt: Type.Optional(Type.String({ format: 'date-time' })) }, { additionalProperties: false })

/**
 * The agent as a response shows it; `adapterConfig` only with `withConfig` (an Operator asking).
 * Fields are listed, not spread, so that a secret column can never slip into a response.
 */
export const presentAgent = (a: Agent, withConfig = false) => ({
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
  ...(withConfig ? { adapterConfig: a.adapterConfig } : {}),
  createdAt: iso(a.createdAt),
  updatedAt: iso(a.updatedAt),
})

export const presentKey = (k: ApiKeyRecord) => ({ id: k.id, name: k.name, createdAt: iso(k.createdAt), expiresAt: isoOrNull(k.expiresAt) })
