import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, errors } from '../schemas/common.js'
import { CreateKeyBody, KeySchema, presentKey } from '../schemas/agents.js'

const KeyList = Type.Object({ keys: Type.Array(KeySchema) })
const CreatedKeyBody = Type.Object({ key: KeySchema, token: Type.String() })

/** Operator keys beyond the bootstrap one: create (token shown once), list, revoke. */
export const operatorKeyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { auth } = app.slaw.services
  const tags = ['keys']

  const listKeys = { tags, response: { 200: KeyList, ...errors } } as const
  app.get('/api/operator-keys', { schema: listKeys }, async (req) => ({
    keys: (await auth.listOperatorKeys(req.actor)).map(presentKey),
  }))

  const createKey = { tags, body: CreateKeyBody, response: { 201: CreatedKeyBody, ...errors } } as const
  app.post('/api/operator-keys', { schema: createKey }, async (req, reply) => {
    const { key, token } = await auth.createOperatorKey(req.actor, req.body.name, req.body.expiresAt)
    return reply.status(201).send({ key: presentKey(key), token })
  })

  const revokeKey = { tags, params: IdParams, response: { 200: Ok, ...errors } } as const
  app.delete('/api/operator-keys/:id', { schema: revokeKey }, async (req) => {
    await auth.revokeOperatorKey(req.actor, req.params.id)
    return { ok: true as const }
  })
}
