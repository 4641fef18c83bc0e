import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, errors } from '../schemas/common.js'
import {
  AggregateHealthSchema,
  CreateProviderConfigBody,
  DiscoveryPreviewBody,
  DiscoveryPreviewSchema,
  ProviderConfigSchema,
  ProviderHealthSchema,
  SupportedProvidersSchema,
  UpdateProviderConfigBody,
  presentProviderConfig,
} from '../schemas/secrets.js'

const ProviderConfigList = Type.Object({ providerConfigs: Type.Array(ProviderConfigSchema) })

/** Secret providers and their configurations (docs/secrets.md): Operator only; settings, never credentials. */
export const secretProviderRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { secretProviders } = app.slaw.services
  const tags = ['secrets']
  const one = Type.Object({ providerConfig: ProviderConfigSchema })

  const supportedProviders = { tags, params: SquadParams, response: { 200: SupportedProvidersSchema, ...errors } } as const
  app.get('/api/squads/:squadId/secret-providers', { schema: supportedProviders }, async (req) => ({
    providers: await secretProviders.supported(req.actor, req.params.squadId),
  }))

  const providersHealth = { tags, params: SquadParams, response: { 200: AggregateHealthSchema, ...errors } } as const
  app.get('/api/squads/:squadId/secret-providers/health', { schema: providersHealth }, async (req) => secretProviders.aggregateHealth(req.actor, req.params.squadId))

  const listConfigs = { tags, params: SquadParams, response: { 200: ProviderConfigList, ...errors } } as const
  app.get('/api/squads/:squadId/secret-provider-configs', { schema: listConfigs }, async (req) => ({
    providerConfigs: (await secretProviders.list(req.actor, req.params.squadId)).map(presentProviderConfig),
  }))

  const createConfig = { tags, params: SquadParams, body: CreateProviderConfigBody, response: { 201: one, ...errors } } as const
  app.post('/api/squads/:squadId/secret-provider-configs', { schema: createConfig }, async (req, reply) => {
    const config = await secretProviders.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ providerConfig: presentProviderConfig(config) })
  })

  const previewDiscovery = {
    tags,
    params: SquadParams,
    body: DiscoveryPreviewBody,
    response: { 200: DiscoveryPreviewSchema, ...errors },
  } as const
  app.post('/api/squads/:squadId/secret-provider-configs/discovery/preview', { schema: previewDiscovery }, async (req) => secretProviders.discoveryPreview(req.actor, req.params.squadId, req.body))

  const getConfig = { tags, params: IdParams, response: { 200: one, ...errors } } as const
  app.get('/api/secret-provider-configs/:id', { schema: getConfig }, async (req) => ({
    providerConfig: presentProviderConfig(await secretProviders.read(req.actor, req.params.id)),
  }))

  const updateConfig = { tags, params: IdParams, body: UpdateProviderConfigBody, response: { 200: one, ...errors } } as const
  app.patch('/api/secret-provider-configs/:id', { schema: updateConfig }, async (req) => ({
    providerConfig: presentProviderConfig(await secretProviders.update(req.actor, req.params.id, req.body)),
  }))

  const deleteConfig = { tags, params: IdParams, response: { 200: Ok, ...errors } } as const
  app.delete('/api/secret-provider-configs/:id', { schema: deleteConfig }, async (req) => {
    await secretProviders.delete(req.actor, req.params.id)
    return { ok: true as const }
  })

  const makeDefault = { tags, params: IdParams, response: { 200: one, ...errors } } as const
  app.post('/api/secret-provider-configs/:id/default', { schema: makeDefault }, async (req) => ({
    providerConfig: presentProviderConfig(await secretProviders.makeDefault(req.actor, req.params.id)),
  }))

  const configHealth = { tags, params: IdParams, response: { 200: ProviderHealthSchema, ...errors } } as const
  app.post('/api/secret-provider-configs/:id/health', { schema: configHealth }, async (req) => secretProviders.health(req.actor, req.params.id))
}
