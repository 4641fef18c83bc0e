import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { LimitSpec } from '@slaw/core/ingest'
import type { TowerServices } from '../../services/index.js'
import { IdParams, errorResponses } from '../../schemas/common.js'
import { LimitInput } from '../../schemas/admin.js'

const Effective = Type.Object({
  limit: Type.Union([LimitSpec, Type.Null()]),
  scope: Type.Union([Type.Literal('instance'), Type.Literal('fleet'), Type.Null()]),
})

/**
 * Fleet budget limits. PUT /limits sets the fleet-wide one, PUT /instances/{id}/limits one instance's;
 * each write gets a new, higher version, and the newest of an instance's own and the fleet-wide
 * limit is the one in effect (delivered as `set_limits`). `mode: "off"` clears.
 */
export const limitRoutes = (services: TowerServices) => async (root: FastifyInstance) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>()

  app.get('/limits', { schema: { response: { 200: Type.Object({ limit: Type.Union([LimitSpec, Type.Null()]) }), ...errorResponses(401, 429) } } }, async () => ({
    limit: await services.limits.fleet(),
  }))

  app.put('/limits', { schema: { body: LimitInput, response: { 200: LimitSpec, ...errorResponses(400, 401, 429) } } }, async (request) => services.limits.set(null, request.body))

  app.get('/instances/:id/limits', { schema: { params: IdParams, response: { 200: Effective, ...errorResponses(401, 404, 429) } } }, async (request) => {
    const pk = await services.fleet.require(request.params.id)
    return (await services.limits.effective(pk)) ?? { limit: null, scope: null }
  })

  app.put('/instances/:id/limits', { schema: { params: IdParams, body: LimitInput, response: { 200: LimitSpec, ...errorResponses(400, 401, 404, 429) } } }, async (request) => {
    const pk = await services.fleet.require(request.params.id)
    return services.limits.set(pk, request.body)
  })
}
