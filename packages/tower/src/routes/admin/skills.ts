import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { TowerServices } from '../../services/index.js'
import { errorResponses } from '../../schemas/common.js'
import { AdminSkill, SkillKeyParams, SkillPublishBody } from '../../schemas/admin.js'

/** The skill catalog: list (published or not), publish (PUT: create or replace), unpublish (DELETE). */
export const skillRoutes = (services: TowerServices) => async (root: FastifyInstance) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>()

  app.get('/skills', { schema: { response: { 200: Type.Object({ catalogVersion: Type.Integer(), skills: Type.Array(AdminSkill) }), ...errorResponses(401, 429) } } }, async () =>
    services.skills.list(),
  )

  app.put(
    '/skills/:key',
    { schema: { params: SkillKeyParams, body: SkillPublishBody, response: { 200: Type.Object({ catalogVersion: Type.Integer(), skill: AdminSkill }), ...errorResponses(400, 401, 429) } } },
    async (request) => services.skills.publish(request.params.key, request.body),
  )

  app.delete('/skills/:key', { schema: { params: SkillKeyParams, response: { 200: Type.Object({ catalogVersion: Type.Integer() }), ...errorResponses(400, 401, 404, 429) } } }, async (request) =>
    services.skills.unpublish(request.params.key),
  )
}
