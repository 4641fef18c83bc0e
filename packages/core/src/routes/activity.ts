import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { SquadParams, errors } from '../schemas/common.js'
import { ActivityQuery, ActivitySchema, CreateActivityBody, presentActivity } from '../schemas/activity.js'

const ActivityList = Type.Object({ activity: Type.Array(ActivitySchema) })
const ActivityBody = Type.Object({ activity: ActivitySchema })

export const activityRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { activity } = app.slaw.services
  const tags = ['activity']

  const listActivity = { tags, params: SquadParams, querystring: ActivityQuery, response: { 200: ActivityList, ...errors } } as const
  app.get('/api/squads/:squadId/activity', { schema: listActivity }, async (req) => ({
    activity: (await activity.list(req.actor, req.params.squadId, req.query)).map(presentActivity),
  }))

  const createActivity = { tags, params: SquadParams, body: CreateActivityBody, response: { 201: ActivityBody, ...errors } } as const
  app.post('/api/squads/:squadId/activity', { schema: createActivity }, async (req, reply) => {
    const entry = await activity.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ activity: presentActivity(entry) })
  })
}
