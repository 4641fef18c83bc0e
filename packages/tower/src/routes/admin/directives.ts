import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { TowerServices } from '../../services/index.js'
import { IdParams, Page, PageQuery, errorResponses } from '../../schemas/common.js'
import { QueueableDirective, QueuedDirective } from '../../schemas/admin.js'

/**
 * Directives queued by hand (set_sync_interval, request_reconciliation, request_live_stream,
 * stop_live_stream), delivered in order in the instance's next heartbeat or sync response.
 * set_limits and skills_updated follow from limits and the catalog on their own.
 */
export const directiveRoutes = (services: TowerServices) => async (root: FastifyInstance) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>()

  app.post(
    '/instances/:id/directives',
    { schema: { params: IdParams, body: QueueableDirective, response: { 201: QueuedDirective, ...errorResponses(400, 401, 404, 429) } } },
    async (request, reply) => {
      const pk = await services.fleet.require(request.params.id)
      return reply.status(201).send(await services.directives.queue(pk, request.body))
    },
  )

  app.get('/instances/:id/directives', { schema: { params: IdParams, querystring: PageQuery, response: { 200: Page(QueuedDirective), ...errorResponses(400, 401, 404, 429) } } }, async (request) =>
    services.directives.list(await services.fleet.require(request.params.id), request.query),
  )

  app.post('/directives', { schema: { body: QueueableDirective, response: { 201: Type.Object({ queued: Type.Integer() }), ...errorResponses(400, 401, 429) } } }, async (request, reply) =>
    reply.status(201).send({ queued: await services.directives.queueForAll(request.body) }),
  )
}
