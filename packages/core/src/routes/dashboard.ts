import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { SquadParams, errors } from '../schemas/common.js'
import { DashboardSchema } from '../schemas/dashboard.js'

export const dashboardRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { dashboard } = app.slaw.services
  const getDashboard = { tags: ['dashboard'], params: SquadParams, response: { 200: DashboardSchema, ...errors } } as const
  app.get('/api/squads/:squadId/dashboard', { schema: getDashboard }, async (req) => dashboard.summary(req.actor, req.params.squadId))
}
