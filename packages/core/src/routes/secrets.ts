import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, errors } from '../schemas/common.js'
import {
  AccessEventsQuery,
  CreateSecretBody,
  RemoteImportBody,
  RemoteImportPreviewBody,
  RemoteImportPreviewSchema,
  RemoteImportSchema,
  RotateSecretBody,
  SecretAccessEventSchema,
  SecretSchema,
  SecretUsageSchema,
  UpdateSecretBody,
  presentAccessEvent,
  presentSecret,
} from '../schemas/secrets.js'

const SecretList = Type.Object({ secrets: Type.Array(SecretSchema) })
const AccessEventList = Type.Object({ events: Type.Array(SecretAccessEventSchema) })

/** Secrets (docs/secrets.md): Operator only; values go in, never come out. */
export const secretRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { secrets } = app.slaw.services
  const tags = ['secrets']
  const one = Type.Object({ secret: SecretSchema })

  const listSecrets = { tags, params: SquadParams, response: { 200: SecretList, ...errors } } as const
  app.get('/api/squads/:squadId/secrets', { schema: listSecrets }, async (req) => ({
    secrets: (await secrets.list(req.actor, req.params.squadId)).map(presentSecret),
  }))

  const createSecret = { tags, params: SquadParams, body: CreateSecretBody, response: { 201: one, ...errors } } as const
  app.post('/api/squads/:squadId/secrets', { schema: createSecret }, async (req, reply) => {
    const secret = await secrets.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ secret: presentSecret(secret) })
  })

  const previewRemoteImport = {
    tags,
    params: SquadParams,
    body: RemoteImportPreviewBody,
    response: { 200: RemoteImportPreviewSchema, ...errors },
  } as const
  app.post('/api/squads/:squadId/secrets/remote-import/preview', { schema: previewRemoteImport }, async (req) => secrets.remoteImportPreview(req.actor, req.params.squadId, req.body))

  const remoteImport = {
    tags,
    params: SquadParams,
    body: RemoteImportBody,
    response: { 200: RemoteImportSchema, ...errors },
  } as const
  app.post('/api/squads/:squadId/secrets/remote-import', { schema: remoteImport }, async (req) => secrets.remoteImport(req.actor, req.params.squadId, req.body))

  const getSecret = { tags, params: IdParams, response: { 200: one, ...errors } } as const
  app.get('/api/secrets/:id', { schema: getSecret }, async (req) => ({
    secret: presentSecret(await secrets.get(req.actor, req.params.id)),
  }))

  const updateSecret = { tags, params: IdParams, body: UpdateSecretBody, response: { 200: one, ...errors } } as const
  app.patch('/api/secrets/:id', { schema: updateSecret }, async (req) => ({
    secret: presentSecret(await secrets.update(req.actor, req.params.id, req.body)),
  }))

  const rotateSecret = { tags, params: IdParams, body: RotateSecretBody, response: { 200: one, ...errors } } as const
  app.post('/api/secrets/:id/rotate', { schema: rotateSecret }, async (req) => ({
    secret: presentSecret(await secrets.rotate(req.actor, req.params.id, req.body)),
  }))

  const deleteSecret = { tags, params: IdParams, response: { 200: Ok, ...errors } } as const
  app.delete('/api/secrets/:id', { schema: deleteSecret }, async (req) => {
    await secrets.delete(req.actor, req.params.id)
    return { ok: true as const }
  })

  const secretUsage = { tags, params: IdParams, response: { 200: SecretUsageSchema, ...errors } } as const
  app.get('/api/secrets/:id/usage', { schema: secretUsage }, async (req) => ({
    secretId: req.params.id,
    ...(await secrets.usage(req.actor, req.params.id)),
  }))

  const accessEvents = { tags, params: IdParams, querystring: AccessEventsQuery, response: { 200: AccessEventList, ...errors } } as const
  app.get('/api/secrets/:id/access-events', { schema: accessEvents }, async (req) => ({
    events: (await secrets.accessEvents(req.actor, req.params.id, req.query)).map(presentAccessEvent),
  }))
}
