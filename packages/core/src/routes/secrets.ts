import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, errors } from '../schemas/common.js'
import {
  AccessEventsQuery, CreateSecretBody, RemoteImportBody, RemoteImportPreviewBody, RemoteImportPreviewSchema, RemoteImportSchema, RotateSecretBody,
  SecretAccessEventSchema, SecretSchema, SecretUsageSchema, UpdateSecretBody, presentAccessEvent, presentSecret,
} from '../schemas/secrets.js'

/** Secrets (docs/secrets.md): Operator only; values go in, never come out. */
export const secretRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { secrets } = app.slaw.services
  const tags = ['secrets']
  const one = Type.Object({ secret: SecretSchema })

  app.get('/api/squads/:squadId/secrets', { schema: { tags, params: SquadParams, response: { 200: Type.Object({ secrets: Type.Array(SecretSchema) }), ...errors } } }, async (req) => ({
    secrets: (await secrets.list(req.actor, req.params.squadId)).map(presentSecret),
  }))

  app.post('/api/squads/:squadId/secrets', { schema: { tags, params: SquadParams, body: CreateSecretBody, response: { 201: one, ...errors } } }, async (req, reply) => {
    const secret = await secrets.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ secret: presentSecret(secret) })
  })

  app.post('/api/squads/:squadId/secrets/remote-import/preview', { schema: { tags, params: SquadParams, body: RemoteImportPreviewBody, response: { 200: RemoteImportPreviewSchema, ...errors } } }, async (req) =>
    secrets.remoteImportPreview(req.actor, req.params.squadId, req.body),
  )

  app.post('/api/squads/:squadId/secrets/remote-import', { schema: { tags, params: SquadParams, body: RemoteImportBody, response: { 200: RemoteImportSchema, ...errors } } }, async (req) =>
    secrets.remoteImport(req.actor, req.params.squadId, req.body),
  )

  app.get('/api/secrets/:id', { schema: { tags, params: IdParams, response: { 200: one, ...errors } } }, async (req) => ({
    secret: presentSecret(await secrets.get(req.actor, req.params.id)),
  }))

  app.patch('/api/secrets/:id', { schema: { tags, params: IdParams, body: UpdateSecretBody, response: { 200: one, ...errors } } }, async (req) => ({
    secret: presentSecret(await secrets.update(req.actor, req.params.id, req.body)),
  }))

  app.post('/api/secrets/:id/rotate', { schema: { tags, params: IdParams, body: RotateSecretBody, response: { 200: one, ...errors } } }, async (req) => ({
    secret: presentSecret(await secrets.rotate(req.actor, req.params.id, req.body)),
  }))

  app.delete('/api/secrets/:id', { schema: { tags, params: IdParams, response: { 200: Ok, ...errors } } }, async (req) => {
    await secrets.delete(req.actor, req.params.id)
    return { ok: true as const }
  })

  app.get('/api/secrets/:id/usage', { schema: { tags, params: IdParams, response: { 200: SecretUsageSchema, ...errors } } }, async (req) => ({
    secretId: req.params.id,
    ...(await secrets.usage(req.actor, req.params.id)),
  }))

  app.get('/api/secrets/:id/access-events', { schema: { tags, params: IdParams, querystring: AccessEventsQuery, response: { 200: Type.Object({ events: Type.Array(SecretAccessEventSchema) }), ...errors } } }, async (req) => ({
    events: (await secrets.accessEvents(req.actor, req.params.id, req.query)).map(presentAccessEvent),
  }))
}
