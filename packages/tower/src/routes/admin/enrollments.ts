import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { TowerServices } from '../../services/index.js'
import { IdParams, Page, errorResponses } from '../../schemas/common.js'
import { EnrollmentListQuery, EnrollmentView } from '../../schemas/admin.js'

/** Enrollments: list (e.g. `?state=pending`), read, approve, reject, revoke. */
export const enrollmentRoutes = (services: TowerServices) => async (root: FastifyInstance) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>()
  const one = { params: IdParams, response: { 200: EnrollmentView, ...errorResponses(401, 404, 422, 429) } }

  app.get('/enrollments', { schema: { querystring: EnrollmentListQuery, response: { 200: Page(EnrollmentView), ...errorResponses(400, 401, 429) } } }, async (request) =>
    services.enrollments.list(request.query),
  )
  app.get('/enrollments/:id', { schema: one }, async (request) => services.enrollments.get(request.params.id))
  app.post('/enrollments/:id/approve', { schema: one }, async (request) => services.enrollments.approve(request.params.id))
  app.post('/enrollments/:id/reject', { schema: one }, async (request) => services.enrollments.reject(request.params.id))
  app.post('/enrollments/:id/revoke', { schema: one }, async (request) => services.enrollments.revoke(request.params.id))
}
