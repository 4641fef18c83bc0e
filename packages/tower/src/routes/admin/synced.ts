import type { FastifyInstance } from 'fastify'
import { Type, type Static } from '@sinclair/typebox'
import type { TowerServices } from '../../services/index.js'
import { IdParams, PageQuery, errorResponses } from '../../schemas/common.js'
import { syncedCollections, syncedFacts } from '../../schemas/admin.js'

const Iso = Type.String({ format: 'date-time' })

/**
 * What each instance synced, paginated: `/instances/{id}/squads`, `agents`, `squad-skills`,
 * `projects`, `issues` (latest state, by localId) and `cost-events`, `run-events`,
 * `activity-events` (newest received first).
 */
export const syncedRoutes = (services: TowerServices) => async (app: FastifyInstance) => {
  // Stored records are the validated wire objects; the response schema (not the handler type) shapes them.
  type Route = { Params: Static<typeof IdParams>; Querystring: Static<typeof PageQuery> }
  const errors = errorResponses(400, 401, 404, 429)

  for (const [path, { type, schema }] of Object.entries(syncedCollections)) {
    const page = Type.Object({ items: Type.Array(Type.Object({ receivedAt: Iso, data: schema })), nextCursor: Type.Union([Type.String(), Type.Null()]) })
    app.get<Route>(`/instances/:id/${path}`, { schema: { params: IdParams, querystring: PageQuery, response: { 200: page, ...errors } } }, async (request) =>
      services.fleet.entities(await services.fleet.require(request.params.id), type, request.query),
    )
  }
  for (const [path, { kind, schema }] of Object.entries(syncedFacts)) {
    const page = Type.Object({ items: Type.Array(Type.Object({ receivedAt: Iso, data: schema })), nextCursor: Type.Union([Type.String(), Type.Null()]) })
    app.get<Route>(`/instances/:id/${path}`, { schema: { params: IdParams, querystring: PageQuery, response: { 200: page, ...errors } } }, async (request) =>
      services.fleet.facts(await services.fleet.require(request.params.id), kind, request.query),
    )
  }
}
