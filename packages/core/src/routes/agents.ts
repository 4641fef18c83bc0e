import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, commaListItems, errors } from '../schemas/common.js'
import {
  AgentListItem,
  AgentMe,
  AgentPeerSchema,
  AgentSchema,
  CreateAgentBody,
  CreateKeyBody,
  InstructionsPathBody,
  KeySchema,
  PermissionsBody,
  UpdateAgentBody,
  presentAgent,
  presentAgentPeer,
  presentKey,
} from '../schemas/agents.js'
import { InboxItem, InboxQuery } from '../schemas/issues.js'
import type { IssueStatus } from '../records.js'
import { isPrivileged } from '../services/foundation/actor.js'

const AgentBody = Type.Object({ agent: AgentSchema })
const CreatedAgentBody = Type.Object({ agent: AgentSchema, webhookSecret: Type.Optional(Type.String()) })
const AgentMeBody = Type.Object({ agent: AgentMe })
const InboxList = Type.Object({ items: Type.Array(InboxItem) })
const AgentList = Type.Object({ agents: Type.Array(AgentListItem) })
const WebhookSecretBody = Type.Object({ webhookSecret: Type.String() })
const KeyList = Type.Object({ keys: Type.Array(KeySchema) })
const CreatedKeyBody = Type.Object({ key: KeySchema, token: Type.String() })
const KeyParams = Type.Object({ id: Type.String({ maxLength: 200 }), keyId: Type.String({ maxLength: 200 }) })

export const agentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { agents, issues } = app.slaw.services
  const tags = ['agents']

  const getMe = { tags, response: { 200: AgentMeBody, ...errors } } as const
  app.get('/api/agents/me', { schema: getMe }, async (req) => {
    const { agent, chainOfCommand } = await agents.me(req.actor)
    return {
      agent: {
        id: agent.id,
        name: agent.name,
        role: agent.role,
        title: agent.title,
        squadId: agent.squadId,
        status: agent.status,
        chainOfCommand,
      },
    }
  })

  const inboxLite = { tags, querystring: InboxQuery, response: { 200: InboxList, ...errors } } as const
  app.get('/api/agents/me/inbox-lite', { schema: inboxLite }, async (req) => ({
    items: await issues.inbox(req.actor, commaListItems<IssueStatus>(req.query.status), req.query.limit),
  }))

  // Another agent of the squad sees the public fields only (docs/authorization.md); the agent itself and the Operator see all
  // (the Operator also its adapterConfig).
  const AgentOrPeerBody = Type.Object({ agent: Type.Union([AgentSchema, AgentPeerSchema]) })
  const getAgent = { tags, params: IdParams, response: { 200: AgentOrPeerBody, ...errors } } as const
  app.get('/api/agents/:id', { schema: getAgent }, async (req) => {
    const agent = await agents.get(req.actor, req.params.id)
    const peer = req.actor.type === 'agent' && req.actor.agentId !== agent.id
    return { agent: peer ? presentAgentPeer(agent) : presentAgent(agent, isPrivileged(req.actor)) }
  })

  const listAgents = { tags, params: SquadParams, response: { 200: AgentList, ...errors } } as const
  app.get('/api/squads/:squadId/agents', { schema: listAgents }, async (req) => ({
    agents: await agents.list(req.actor, req.params.squadId),
  }))

  const createAgent = { tags, params: SquadParams, body: CreateAgentBody, response: { 201: CreatedAgentBody, ...errors } } as const
  app.post('/api/squads/:squadId/agents', { schema: createAgent }, async (req, reply) => {
    const agent = await agents.create(req.actor, req.params.squadId, req.body)
    // The webhook signing secret of an http agent is shown here once.
    return reply.status(201).send({
      agent: presentAgent(agent, true),
      ...(agent.webhookSecret ? { webhookSecret: agent.webhookSecret } : {}),
    })
  })

  const rotateWebhookSecret = { tags, params: IdParams, response: { 200: WebhookSecretBody, ...errors } } as const
  app.post('/api/agents/:id/webhook-secret/rotate', { schema: rotateWebhookSecret }, async (req) => ({
    webhookSecret: await agents.rotateWebhookSecret(req.actor, req.params.id),
  }))

  const updateAgent = { tags, params: IdParams, body: UpdateAgentBody, response: { 200: AgentBody, ...errors } } as const
  app.patch('/api/agents/:id', { schema: updateAgent }, async (req) => ({
    agent: presentAgent(await agents.update(req.actor, req.params.id, req.body), true),
  }))

  const setPermissions = { tags, params: IdParams, body: PermissionsBody, response: { 200: AgentBody, ...errors } } as const
  app.patch('/api/agents/:id/permissions', { schema: setPermissions }, async (req) => ({
    agent: presentAgent(await agents.setPermissions(req.actor, req.params.id, req.body)),
  }))

  const setInstructionsPath = { tags, params: IdParams, body: InstructionsPathBody, response: { 200: AgentBody, ...errors } } as const
  app.patch('/api/agents/:id/instructions-path', { schema: setInstructionsPath }, async (req) => ({
    agent: presentAgent(await agents.setInstructionsPath(req.actor, req.params.id, req.body.instructionsPath)),
  }))

  for (const action of ['pause', 'resume', 'terminate'] as const) {
    const setStatus = { tags, params: IdParams, response: { 200: Ok, ...errors } } as const
    app.post(`/api/agents/:id/${action}`, { schema: setStatus }, async (req) => {
      await agents.setStatus(req.actor, req.params.id, action)
      return { ok: true as const }
    })
  }

  const deleteAgent = { tags, params: IdParams, response: { 200: Ok, ...errors } } as const
  app.delete('/api/agents/:id', { schema: deleteAgent }, async (req) => {
    await agents.delete(req.actor, req.params.id)
    return { ok: true as const }
  })

  const listKeys = { tags, params: IdParams, response: { 200: KeyList, ...errors } } as const
  app.get('/api/agents/:id/keys', { schema: listKeys }, async (req) => ({
    keys: (await agents.listKeys(req.actor, req.params.id)).map(presentKey),
  }))

  const createKey = { tags, params: IdParams, body: CreateKeyBody, response: { 201: CreatedKeyBody, ...errors } } as const
  app.post('/api/agents/:id/keys', { schema: createKey }, async (req, reply) => {
    const { key, token } = await agents.createKey(req.actor, req.params.id, req.body)
    return reply.status(201).send({ key: presentKey(key), token })
  })

  const revokeKey = { tags, params: KeyParams, response: { 200: Ok, ...errors } } as const
  app.delete('/api/agents/:id/keys/:keyId', { schema: revokeKey }, async (req) => {
    await agents.revokeKey(req.actor, req.params.id, req.params.keyId)
    return { ok: true as const }
  })
}
