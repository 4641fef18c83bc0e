import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, errors } from '../schemas/common.js'
import {
  CommentParams, CommentSchema, CommentsQuery, CreateCommentBody, CreateInteractionBody, DocumentParams, DocumentSchema, InteractionParams,
  InteractionSchema, PutDocumentBody, ResolveInteractionBody, presentComment, presentDocument, presentInteraction,
} from '../schemas/issues.js'
import { Uuid } from '../schemas/common.js'

/** Comments, documents and interactions of an issue. */
export const issueRecordRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { issueRecords } = app.slaw.services
  const tags = ['issues']

  app.get('/api/issues/:id/comments', { schema: { tags, params: IdParams, querystring: CommentsQuery, response: { 200: Type.Object({ comments: Type.Array(CommentSchema) }), ...errors } } }, async (req) => ({
    comments: (await issueRecords.listComments(req.actor, req.params.id, req.query)).map(presentComment),
  }))

  app.get('/api/issues/:id/comments/:commentId', { schema: { tags, params: CommentParams, response: { 200: Type.Object({ comment: CommentSchema }), ...errors } } }, async (req) => ({
    comment: presentComment(await issueRecords.getComment(req.actor, req.params.id, req.params.commentId)),
  }))

  app.post('/api/issues/:id/comments', { schema: { tags, params: IdParams, body: CreateCommentBody, response: { 201: Type.Object({ comment: CommentSchema }), ...errors } } }, async (req, reply) => {
    const comment = await issueRecords.submitComment(req.actor, req.params.id, req.body)
    return reply.status(201).send({ comment: presentComment(comment) })
  })

  app.get('/api/issues/:id/documents', { schema: { tags, params: IdParams, response: { 200: Type.Object({ documents: Type.Array(DocumentSchema) }), ...errors } } }, async (req) => ({
    documents: (await issueRecords.listDocuments(req.actor, req.params.id)).map(presentDocument),
  }))

  app.get('/api/issues/:id/documents/:key', { schema: { tags, params: DocumentParams, response: { 200: Type.Object({ document: DocumentSchema }), ...errors } } }, async (req) => ({
    document: presentDocument(await issueRecords.getDocument(req.actor, req.params.id, req.params.key)),
  }))

  app.put('/api/issues/:id/documents/:key', { schema: { tags, params: DocumentParams, body: PutDocumentBody, response: { 200: Type.Object({ document: DocumentSchema }), 201: Type.Object({ document: DocumentSchema }), ...errors } } }, async (req, reply) => {
    const { document, created } = await issueRecords.putDocument(req.actor, req.params.id, req.params.key, req.body)
    return reply.status(created ? 201 : 200).send({ document: presentDocument(document) })
  })

  app.delete('/api/issues/:id/documents/:key', { schema: { tags, params: DocumentParams, response: { 200: Ok, ...errors } } }, async (req) => {
    await issueRecords.deleteDocument(req.actor, req.params.id, req.params.key)
    return { ok: true as const }
  })

  app.get('/api/issues/:id/interactions', { schema: { tags, params: IdParams, response: { 200: Type.Object({ interactions: Type.Array(InteractionSchema) }), ...errors } } }, async (req) => ({
    interactions: (await issueRecords.listInteractions(req.actor, req.params.id)).map(presentInteraction),
  }))

  app.post('/api/issues/:id/interactions', { schema: { tags, params: IdParams, body: CreateInteractionBody, response: { 200: Type.Object({ interaction: InteractionSchema }), 201: Type.Object({ interaction: InteractionSchema }), ...errors } } }, async (req, reply) => {
    const { interaction, created } = await issueRecords.createInteraction(req.actor, req.params.id, req.body)
    // A repeated idempotencyKey returns the stored interaction with 200.
    return reply.status(created ? 201 : 200).send({ interaction: presentInteraction(interaction) })
  })

  for (const action of ['accept', 'reject', 'respond'] as const) {
    app.post(`/api/issues/:id/interactions/:interactionId/${action}`, {
      schema: { tags, params: InteractionParams, body: ResolveInteractionBody, response: { 200: Type.Object({ interaction: InteractionSchema, createdIssueIds: Type.Array(Uuid) }), ...errors } },
      // The body is optional (a bare accept or reject): no body validates as `{}`.
      preValidation: async (req) => {
        if (req.body === undefined || req.body === null) req.body = {}
      },
    }, async (req) => {
      const { interaction, createdIssueIds } = await issueRecords.resolveInteraction(req.actor, req.params.id, req.params.interactionId, action, req.body ?? {})
      return { interaction: presentInteraction(interaction), createdIssueIds }
    })
  }
}
