import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Ok, SquadParams, errors } from '../schemas/common.js'
import { CreateSquadBody, OrgChart, SquadListItem, SquadSchema, UpdateSquadBody, presentSquad } from '../schemas/squads.js'

export const squadRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { squads } = app.slaw.services
  const tags = ['squads']

  app.get('/api/squads', { schema: { tags, response: { 200: Type.Object({ squads: Type.Array(SquadListItem) }), ...errors } } }, async (req) => ({
    squads: (await squads.list(req.actor)).map(presentSquad),
  }))

  app.post('/api/squads', { schema: { tags, body: CreateSquadBody, response: { 201: Type.Object({ squad: SquadSchema }), ...errors } } }, async (req, reply) => {
    const squad = await squads.create(req.actor, req.body)
    return reply.status(201).send({ squad: presentSquad(squad) })
  })

  app.get('/api/squads/:squadId', { schema: { tags, params: SquadParams, response: { 200: Type.Object({ squad: SquadSchema }), ...errors } } }, async (req) => ({
    squad: presentSquad(await squads.get(req.actor, req.params.squadId)),
  }))

  app.patch('/api/squads/:squadId', { schema: { tags, params: SquadParams, body: UpdateSquadBody, response: { 200: Type.Object({ squad: SquadSchema }), ...errors } } }, async (req) => ({
    squad: presentSquad(await squads.update(req.actor, req.params.squadId, req.body)),
  }))

  app.post('/api/squads/:squadId/archive', { schema: { tags, params: SquadParams, response: { 200: Ok, ...errors } } }, async (req) => {
    await squads.archive(req.actor, req.params.squadId)
    return { ok: true as const }
  })

  app.delete('/api/squads/:squadId', { schema: { tags, params: SquadParams, response: { 200: Ok, ...errors } } }, async (req) => {
    await squads.delete(req.actor, req.params.squadId)
    return { ok: true as const }
  })

  app.get('/api/squads/:squadId/org', { schema: { tags, params: SquadParams, response: { 200: Type.Object({ org: OrgChart }), ...errors } } }, async (req) => ({
    org: await squads.org(req.actor, req.params.squadId),
  }))
}
