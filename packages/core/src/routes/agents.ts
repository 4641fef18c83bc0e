import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, errors } from '../schemas/common.js'
import {
  AgentListItem, AgentMe, AgentPeerSchema, AgentSchema, CreateAgentBody, CreateKeyBody, InstructionsPathBody, KeySchema, PermissionsBody,
  RuntimeState, UpdateAgentBody, presentAgent, presentAgentPeer, presentKey,
} from '../schemas/agents.js'
import { InboxItem, InboxQuery } from '../schemas/issues.js'
import type { IssueStatus } from '../records.js'

const AgentBody = Type.Object({ agent: AgentSchema })

export const agentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { agents, issues } = app.slaw.services
  const tags = ['agents']

  app.get('/api/agents/me', { schema: { tags, response: { 200: Type.Object({ agent: AgentMe }), ...errors } } }, async (req) => {
    const { agent, chainOfCommand } = await agents.me(req.actor)
    return { agent: { id: agent.id, name: agent.name, role: agent.role, title: agent.title, squadId: agent.squadId, status: agent.status, chainOfCommand } }
  })

  app.get('/api/agents/me/inbox-lite', { schema: { tags, querystring: InboxQuery, response: { 200: Type.Object({ items: Type.Array(InboxItem) }), ...errors } } }, async (req) => ({
    items: await issues.inbox(req.actor, req.query.status?.split(',') as IssueStatus[] | undefined, req.query.limit),
  }))

  // Another agent of the squad sees the spec's fields only; the agent itself and the Operator see all.
  const AgentOrPeerBody = Type.Object({ agent: Type.Union([AgentSchema, AgentPeerSchema]) })
  app.get('/api/agents/:id', { schema: { tags, params: IdParams, response: { 200: AgentOrPeerBody, ...errors } } }, async (req) => {
    const agent = await agents.get(req.actor, req.params.id)
    const peer = req.actor.type === 'agent' && req.actor.agentId !== agent.id
    return { agent: peer ? presentAgentPeer(agent) : presentAgent(agent) }
  })

  app.get('/api/squads/:squadId/agents', { schema: { tags, params: SquadParams, response: { 200: Type.Object({ agents: Type.Array(AgentListItem) }), ...errors } } }, async (req) => ({
    agents: await agents.list(req.actor, req.params.squadId),
  }))

  app.post('/api/squads/:squadId/agents', { schema: { tags, params: SquadParams, body: CreateAgentBody, response: { 201: AgentBody, ...errors } } }, async (req, reply) => {
    const agent = await agents.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ agent: presentAgent(agent) })
  })

  app.patch('/api/agents/:id', { schema: { tags, params: IdParams, body: UpdateAgentBody, response: { 200: AgentBody, ...errors } } }, async (req) => ({
    agent: presentAgent(await agents.update(req.actor, req.params.id, req.body)),
  }))

  app.patch('/api/agents/:id/permissions', { schema: { tags, params: IdParams, body: PermissionsBody, response: { 200: AgentBody, ...errors } } }, async (req) => ({
    agent: presentAgent(await agents.setPermissions(req.actor, req.params.id, req.body)),
  }))

  app.patch('/api/agents/:id/instructions-path', { schema: { tags, params: IdParams, body: InstructionsPathBody, response: { 200: AgentBody, ...errors } } }, async (req) => ({
    agent: presentAgent(await agents.setInstructionsPath(req.actor, req.params.id, req.body.instructionsPath)),
  }))

  for (const action of ['pause', 'resume', 'terminate'] as const) {
    app.post(`/api/agents/:id/${action}`, { schema: { tags, params: IdParams, response: { 200: Ok, ...errors } } }, async (req) => {
      await agents.setStatus(req.actor, req.params.id, action)
      return { ok: true as const }
    })
  }

  app.delete('/api/agents/:id', { schema: { tags, params: IdParams, response: { 200: Ok, ...errors } } }, async (req) => {
    await agents.delete(req.actor, req.params.id)
    return { ok: true as const }
  })

  app.get('/api/agents/:id/keys', { schema: { tags, params: IdParams, response: { 200: Type.Object({ keys: Type.Array(KeySchema) }), ...errors } } }, async (req) => ({
    keys: (await agents.listKeys(req.actor, req.params.id)).map(presentKey),
  }))

  app.post('/api/agents/:id/keys', { schema: { tags, params: IdParams, body: CreateKeyBody, response: { 201: Type.Object({ key: KeySchema, token: Type.String() }), ...errors } } }, async (req, reply) => {
    const { key, token } = await agents.createKey(req.actor, req.params.id, req.body)
    return reply.status(201).send({ key: presentKey(key), token })
  })

  app.delete('/api/agents/:id/keys/:keyId', { schema: { tags, params: Type.Object({ id: Type.String({ maxLength: 200 }), keyId: Type.String({ maxLength: 200 }) }), response: { 200: Ok, ...errors } } }, async (req) => {
    await agents.revokeKey(req.actor, req.params.id, req.params.keyId)
    return { ok: true as const }
  })

  app.get('/api/agents/:id/runtime-state', { schema: { tags, params: IdParams, response: { 200: Type.Object({ runtimeState: RuntimeState }), ...errors } } }, async (req) => {
    const s = await agents.runtimeState(req.actor, req.params.id)
    return { runtimeState: { ...s, updatedAt: s.updatedAt.toISOString() } }
  })

  app.post('/api/agents/:id/runtime-state/reset-session', { schema: { tags, params: IdParams, response: { 200: Ok, ...errors } } }, async (req) => {
    await agents.resetSession(req.actor, req.params.id)
    return { ok: true as const }
  })
}
