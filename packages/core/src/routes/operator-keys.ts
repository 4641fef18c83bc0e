import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, errors } from '../schemas/common.js'
import { CreateKeyBody, KeySchema, presentKey } from '../schemas/agents.js'

/** Operator keys beyond the bootstrap one: create (token shown once), list, revoke. */
export const operatorKeyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { auth } = app.slaw.services
  const tags = ['keys']

  app.get('/api/operator-keys', { schema: { tags, response: { 200: Type.Object({ keys: Type.Array(KeySchema) }), ...errors } } }, async (req) => ({
    keys: (await auth.listOperatorKeys(req.actor)).map(presentKey),
  }))

  app.post('/api/operator-keys', { schema: { tags, body: CreateKeyBody, response: { 201: Type.Object({ key: KeySchema, token: Type.String() }), ...errors } } }, async (req, reply) => {
    const { key, token } = await auth.createOperatorKey(req.actor, req.body.name, req.body.expiresAt)
    return reply.status(201).send({ key: presentKey(key), token })
  })

  app.delete('/api/operator-keys/:id', { schema: { tags, params: IdParams, response: { 200: Ok, ...errors } } }, async (req) => {
    await auth.revokeOperatorKey(req.actor, req.params.id)
    return { ok: true as const }
  })
}
