import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, errors } from '../schemas/common.js'
import { CreateTriggerBody, PublicFireParams, PublicFireResponse, TriggerWithSecretSchema, UpdateTriggerBody, presentTriggerWithSecret } from '../schemas/routine-triggers.js'

/** Routine triggers: schedules, webhooks and API triggers, and the public fire URL (docs/routines.md). */
export const routineTriggerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { routines } = app.slaw.services
  const tags = ['routines']

  const createTrigger = { tags, params: IdParams, body: CreateTriggerBody, response: { 201: TriggerWithSecretSchema, ...errors } } as const
  app.post('/api/routines/:id/triggers', { schema: createTrigger }, async (req, reply) => {
    return reply.status(201).send(presentTriggerWithSecret(await routines.createTrigger(req.actor, req.params.id, req.body)))
  })

  const updateTrigger = { tags, params: IdParams, body: UpdateTriggerBody, response: { 200: TriggerWithSecretSchema, ...errors } } as const
  app.patch('/api/routine-triggers/:id', { schema: updateTrigger }, async (req) => presentTriggerWithSecret(await routines.updateTrigger(req.actor, req.params.id, req.body)))

  const deleteTrigger = { tags, params: IdParams, response: { 200: Ok, ...errors } } as const
  app.delete('/api/routine-triggers/:id', { schema: deleteTrigger }, async (req) => {
    await routines.deleteTrigger(req.actor, req.params.id)
    return { ok: true as const }
  })

  const rotateSecret = { tags, params: IdParams, response: { 200: TriggerWithSecretSchema, ...errors } } as const
  app.post('/api/routine-triggers/:id/rotate-secret', { schema: rotateSecret }, async (req) => presentTriggerWithSecret(await routines.rotateSecret(req.actor, req.params.id)))

  // The public fire URL in a context of its own: signatures are computed over the raw body, so
  // here (and only here) every body is read as bytes; the service parses JSON after checking them.
  await app.register(async (pub) => {
    pub.removeAllContentTypeParsers()
    pub.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body))
    const fireTrigger = {
      tags,
      security: [],
      description:
        "Fires a webhook or API trigger. No API key: the trigger's signing mode decides (docs/routines.md). " + '201 with the new run, 200 with the stored one for a repeated idempotency key.',
      params: PublicFireParams,
      response: { 200: PublicFireResponse, 201: PublicFireResponse, ...errors },
    } as const
    pub.post('/api/routine-triggers/public/:publicId/fire', { config: { public: true }, schema: fireTrigger }, async (req, reply) => {
      const rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0)
      const { run, created } = await routines.fire((req.params as { publicId: string }).publicId, {
        headers: req.headers,
        rawBody,
        contentType: req.headers['content-type'],
      })
      return reply.status(created ? 201 : 200).send({
        run: { id: run.id, status: run.status, issueId: run.issueId, linkedRunId: run.linkedRunId, createdAt: run.createdAt.toISOString() },
      })
    })
  })
}
