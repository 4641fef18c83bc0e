import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, errors } from '../schemas/common.js'
import {
  AggregateHealthSchema, CreateProviderConfigBody, DiscoveryPreviewBody, DiscoveryPreviewSchema, ProviderConfigSchema, ProviderHealthSchema,
  SupportedProvidersSchema, UpdateProviderConfigBody, presentProviderConfig,
} from '../schemas/secrets.js'

/** Secret providers and their configurations (docs/secrets.md): Operator only; settings, never credentials. */
export const secretProviderRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { secretProviders } = app.slaw.services
  const tags = ['secrets']
  const one = Type.Object({ providerConfig: ProviderConfigSchema })

  app.get('/api/squads/:squadId/secret-providers', { schema: { tags, params: SquadParams, response: { 200: SupportedProvidersSchema, ...errors } } }, async (req) => ({
    providers: await secretProviders.supported(req.actor, req.params.squadId),
  }))

  app.get('/api/squads/:squadId/secret-providers/health', { schema: { tags, params: SquadParams, response: { 200: AggregateHealthSchema, ...errors } } }, async (req) =>
    secretProviders.aggregateHealth(req.actor, req.params.squadId),
  )

  app.get('/api/squads/:squadId/secret-provider-configs', { schema: { tags, params: SquadParams, response: { 200: Type.Object({ providerConfigs: Type.Array(ProviderConfigSchema) }), ...errors } } }, async (req) => ({
    providerConfigs: (await secretProviders.list(req.actor, req.params.squadId)).map(presentProviderConfig),
  }))

  app.post('/api/squads/:squadId/secret-provider-configs', { schema: { tags, params: SquadParams, body: CreateProviderConfigBody, response: { 201: one, ...errors } } }, async (req, reply) => {
    const config = await secretProviders.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ providerConfig: presentProviderConfig(config) })
  })

  app.post('/api/squads/:squadId/secret-provider-configs/discovery/preview', { schema: { tags, params: SquadParams, body: DiscoveryPreviewBody, response: { 200: DiscoveryPreviewSchema, ...errors } } }, async (req) =>
    secretProviders.discoveryPreview(req.actor, req.params.squadId, req.body),
  )

  app.get('/api/secret-provider-configs/:id', { schema: { tags, params: IdParams, response: { 200: one, ...errors } } }, async (req) => ({
    providerConfig: presentProviderConfig(await secretProviders.read(req.actor, req.params.id)),
  }))

  app.patch('/api/secret-provider-configs/:id', { schema: { tags, params: IdParams, body: UpdateProviderConfigBody, response: { 200: one, ...errors } } }, async (req) => ({
    providerConfig: presentProviderConfig(await secretProviders.update(req.actor, req.params.id, req.body)),
  }))

  app.delete('/api/secret-provider-configs/:id', { schema: { tags, params: IdParams, response: { 200: Ok, ...errors } } }, async (req) => {
    await secretProviders.delete(req.actor, req.params.id)
    return { ok: true as const }
  })

  app.post('/api/secret-provider-configs/:id/default', { schema: { tags, params: IdParams, response: { 200: one, ...errors } } }, async (req) => ({
    providerConfig: presentProviderConfig(await secretProviders.makeDefault(req.actor, req.params.id)),
  }))

  app.post('/api/secret-provider-configs/:id/health', { schema: { tags, params: IdParams, response: { 200: ProviderHealthSchema, ...errors } } }, async (req) =>
    secretProviders.health(req.actor, req.params.id),
  )
}
