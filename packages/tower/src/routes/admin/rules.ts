import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { TowerServices } from '../../services/index.js'
import { IdParams, Ok, errorResponses } from '../../schemas/common.js'
import { AutoApproveRule, AutoApproveRuleInput } from '../../schemas/admin.js'

/** Auto-approve rules: list (configured and stored), create, delete (stored ones only). */
export const ruleRoutes = (services: TowerServices) => async (root: FastifyInstance) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>()

  app.get('/auto-approve-rules', { schema: { response: { 200: Type.Object({ items: Type.Array(AutoApproveRule) }), ...errorResponses(401, 429) } } }, async () => ({
    items: await services.rules.list(),
  }))

  app.post('/auto-approve-rules', { schema: { body: AutoApproveRuleInput, response: { 201: AutoApproveRule, ...errorResponses(400, 401, 429) } } }, async (request, reply) =>
    reply.status(201).send(await services.rules.create(request.body)),
  )

  app.delete('/auto-approve-rules/:id', { schema: { params: IdParams, response: { 200: Ok, ...errorResponses(401, 404, 429) } } }, async (request) => {
    await services.rules.remove(request.params.id)
    return { ok: true as const }
  })
}
