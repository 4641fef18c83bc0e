import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, errors } from '../schemas/common.js'
import {
  CommentParams,
  CommentSchema,
  CommentsQuery,
  CreateCommentBody,
  CreateInteractionBody,
  DocumentParams,
  DocumentSchema,
  InteractionParams,
  InteractionSchema,
  PutDocumentBody,
  ResolveInteractionBody,
  presentComment,
  presentDocument,
  presentInteraction,
} from '../schemas/issues.js'
import { Uuid } from '../schemas/common.js'

const CommentList = Type.Object({ comments: Type.Array(CommentSchema) })
const CommentBody = Type.Object({ comment: CommentSchema })
const DocumentList = Type.Object({ documents: Type.Array(DocumentSchema) })
const DocumentBody = Type.Object({ document: DocumentSchema })
const InteractionList = Type.Object({ interactions: Type.Array(InteractionSchema) })
const InteractionBody = Type.Object({ interaction: InteractionSchema })
const ResolvedInteractionBody = Type.Object({ interaction: InteractionSchema, createdIssueIds: Type.Array(Uuid) })

/** Comments, documents and interactions of an issue. */
export const issueRecordRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { issueRecords } = app.slaw.services
  const tags = ['issues']

  const listComments = { tags, params: IdParams, querystring: CommentsQuery, response: { 200: CommentList, ...errors } } as const
  app.get('/api/issues/:id/comments', { schema: listComments }, async (req) => ({
    comments: (await issueRecords.listComments(req.actor, req.params.id, req.query)).map(presentComment),
  }))

  const getComment = { tags, params: CommentParams, response: { 200: CommentBody, ...errors } } as const
  app.get('/api/issues/:id/comments/:commentId', { schema: getComment }, async (req) => ({
    comment: presentComment(await issueRecords.getComment(req.actor, req.params.id, req.params.commentId)),
  }))

  const addComment = { tags, params: IdParams, body: CreateCommentBody, response: { 201: CommentBody, ...errors } } as const
  app.post('/api/issues/:id/comments', { schema: addComment }, async (req, reply) => {
    const comment = await issueRecords.submitComment(req.actor, req.params.id, req.body)
    return reply.status(201).send({ comment: presentComment(comment) })
  })

  const listDocuments = { tags, params: IdParams, response: { 200: DocumentList, ...errors } } as const
  app.get('/api/issues/:id/documents', { schema: listDocuments }, async (req) => ({
    documents: (await issueRecords.listDocuments(req.actor, req.params.id)).map(presentDocument),
  }))

  const getDocument = { tags, params: DocumentParams, response: { 200: DocumentBody, ...errors } } as const
  app.get('/api/issues/:id/documents/:key', { schema: getDocument }, async (req) => ({
    document: presentDocument(await issueRecords.getDocument(req.actor, req.params.id, req.params.key)),
  }))

  const putDocument = {
    tags,
    params: DocumentParams,
    body: PutDocumentBody,
    response: { 200: DocumentBody, 201: DocumentBody, ...errors },
  } as const
  app.put('/api/issues/:id/documents/:key', { schema: putDocument }, async (req, reply) => {
    const { document, created } = await issueRecords.putDocument(req.actor, req.params.id, req.params.key, req.body)
    return reply.status(created ? 201 : 200).send({ document: presentDocument(document) })
  })

  const deleteDocument = { tags, params: DocumentParams, response: { 200: Ok, ...errors } } as const
  app.delete('/api/issues/:id/documents/:key', { schema: deleteDocument }, async (req) => {
    await issueRecords.deleteDocument(req.actor, req.params.id, req.params.key)
    return { ok: true as const }
  })

  const listInteractions = { tags, params: IdParams, response: { 200: InteractionList, ...errors } } as const
  app.get('/api/issues/:id/interactions', { schema: listInteractions }, async (req) => ({
    interactions: (await issueRecords.listInteractions(req.actor, req.params.id)).map(presentInteraction),
  }))

  const createInteraction = {
    tags,
    params: IdParams,
    body: CreateInteractionBody,
    response: { 200: InteractionBody, 201: InteractionBody, ...errors },
  } as const
  app.post('/api/issues/:id/interactions', { schema: createInteraction }, async (req, reply) => {
    const { interaction, created } = await issueRecords.createInteraction(req.actor, req.params.id, req.body)
    // A repeated idempotencyKey returns the stored interaction with 200.
    return reply.status(created ? 201 : 200).send({ interaction: presentInteraction(interaction) })
  })

  for (const action of ['accept', 'reject', 'respond'] as const) {
    const resolveInteraction = {
      tags,
      params: InteractionParams,
      body: ResolveInteractionBody,
      response: { 200: ResolvedInteractionBody, ...errors },
    } as const
    app.post(
      `/api/issues/:id/interactions/:interactionId/${action}`,
      {
        schema: resolveInteraction,
        // The body is optional (a bare accept or reject): no body validates as `{}`.
        preValidation: async (req) => {
          if (req.body === undefined || req.body === null) req.body = {}
        },
      },
      async (req) => {
        const { interaction, createdIssueIds } = await issueRecords.resolveInteraction(req.actor, req.params.id, req.params.interactionId, action, req.body ?? {})
        return { interaction: presentInteraction(interaction), createdIssueIds }
      },
    )
  }
}
