import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { TowerServices } from '../../services/index.js'
import { IdParams, Page, errorResponses } from '../../schemas/common.js'
import { InstanceListQuery, InstanceView } from '../../schemas/admin.js'

/** GET /instances (online or offline, last heartbeat, counts, spend), GET /instances/{id}. */
export const instanceRoutes = (services: TowerServices) => async (root: FastifyInstance) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>()

  app.get('/instances', { schema: { querystring: InstanceListQuery, response: { 200: Page(InstanceView), ...errorResponses(400, 401, 429) } } }, async (request) => services.fleet.list(request.query))

  app.get('/instances/:id', { schema: { params: IdParams, response: { 200: InstanceView, ...errorResponses(401, 404, 429) } } }, async (request) => services.fleet.get(request.params.id))
}
