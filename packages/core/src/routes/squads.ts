import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Ok, SquadParams, errors } from '../schemas/common.js'
import { CreateSquadBody, OrgChart, SquadListItem, SquadSchema, UpdateSquadBody, presentSquad } from '../schemas/squads.js'

const SquadList = Type.Object({ squads: Type.Array(SquadListItem) })
const SquadBody = Type.Object({ squad: SquadSchema })
const OrgChartBody = Type.Object({ org: OrgChart })

export const squadRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { squads } = app.slaw.services
  const tags = ['squads']

  const listSquads = { tags, response: { 200: SquadList, ...errors } } as const
  app.get('/api/squads', { schema: listSquads }, async (req) => ({
    squads: (await squads.list(req.actor)).map(presentSquad),
  }))

  const createSquad = { tags, body: CreateSquadBody, response: { 201: SquadBody, ...errors } } as const
  app.post('/api/squads', { schema: createSquad }, async (req, reply) => {
    const squad = await squads.create(req.actor, req.body)
    return reply.status(201).send({ squad: presentSquad(squad) })
  })

  const getSquad = { tags, params: SquadParams, response: { 200: SquadBody, ...errors } } as const
  app.get('/api/squads/:squadId', { schema: getSquad }, async (req) => ({
    squad: presentSquad(await squads.get(req.actor, req.params.squadId)),
  }))

  const updateSquad = { tags, params: SquadParams, body: UpdateSquadBody, response: { 200: SquadBody, ...errors } } as const
  app.patch('/api/squads/:squadId', { schema: updateSquad }, async (req) => ({
    squad: presentSquad(await squads.update(req.actor, req.params.squadId, req.body)),
  }))

  const archiveSquad = { tags, params: SquadParams, response: { 200: Ok, ...errors } } as const
  app.post('/api/squads/:squadId/archive', { schema: archiveSquad }, async (req) => {
    await squads.archive(req.actor, req.params.squadId)
    return { ok: true as const }
  })

  const deleteSquad = { tags, params: SquadParams, response: { 200: Ok, ...errors } } as const
  app.delete('/api/squads/:squadId', { schema: deleteSquad }, async (req) => {
    await squads.delete(req.actor, req.params.squadId)
    return { ok: true as const }
  })

  const getOrgChart = { tags, params: SquadParams, response: { 200: OrgChartBody, ...errors } } as const
  app.get('/api/squads/:squadId/org', { schema: getOrgChart }, async (req) => ({
    org: await squads.org(req.actor, req.params.squadId),
  }))
}
