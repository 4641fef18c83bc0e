import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { SquadParams, errors } from '../schemas/common.js'
import { ActivityQuery, ActivitySchema, CreateActivityBody, presentActivity } from '../schemas/activity.js'

export const activityRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { activity } = app.slaw.services
  const tags = ['activity']

  app.get('/api/squads/:squadId/activity', { schema: { tags, params: SquadParams, querystring: ActivityQuery, response: { 200: Type.Object({ activity: Type.Array(ActivitySchema) }), ...errors } } }, async (req) => ({
    activity: (await activity.list(req.actor, req.params.squadId, req.query)).map(presentActivity),
  }))

  app.post('/api/squads/:squadId/activity', { schema: { tags, params: SquadParams, body: CreateActivityBody, response: { 201: Type.Object({ activity: ActivitySchema }), ...errors } } }, async (req, reply) => {
    const entry = await activity.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ activity: presentActivity(entry) })
  })
}
