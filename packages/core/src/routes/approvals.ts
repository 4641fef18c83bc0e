import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { preValidationHookHandler } from 'fastify'
import { IdParams, SquadParams, errors } from '../schemas/common.js'
import {
  ApprovalCommentSchema, ApprovalDetailSchema, ApprovalListQuery, ApprovalSchema, CreateApprovalBody, CreateApprovalCommentBody, DecisionBody,
  HireAccepted, HireBody, ResubmitBody, presentApproval, presentApprovalComment, presentApprovalDetail,
} from '../schemas/approvals.js'
import { IssueSummarySchema } from '../schemas/issues.js'
import type { Approval, ApprovalStatus } from '../contracts/governance.js'
import type { Actor } from '../services/actor.js'

/** Decisions may be posted without a body (the note is optional). */
const emptyBodyIsObject: preValidationHookHandler = async (req) => {
  if (req.body === undefined || req.body === null) req.body = {}
}

export const approvalRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { approvals } = app.slaw.services
  const tags = ['approvals']
  const One = Type.Object({ approval: ApprovalSchema })

  app.get('/api/squads/:squadId/approvals', { schema: { tags, params: SquadParams, querystring: ApprovalListQuery, response: { 200: Type.Object({ approvals: Type.Array(ApprovalSchema) }), ...errors } } }, async (req) => {
    const { status, ...page } = req.query
    const list = await approvals.list(req.actor, req.params.squadId, { ...page, ...(status ? { statuses: status.split(',') as ApprovalStatus[] } : {}) })
    return { approvals: list.map(presentApproval) }
  })

  app.post('/api/squads/:squadId/approvals', { schema: { tags, params: SquadParams, body: CreateApprovalBody, response: { 201: Type.Object({ approval: ApprovalDetailSchema }), ...errors } } }, async (req, reply) => {
    const approval = await approvals.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ approval: presentApprovalDetail(approval) })
  })

  app.post('/api/squads/:squadId/agent-hires', { schema: { tags: [...tags, 'agents'], params: SquadParams, body: HireBody, response: { 202: HireAccepted, ...errors } } }, async (req, reply) => {
    const approval = await approvals.hire(req.actor, req.params.squadId, req.body)
    return reply.status(202).send({ approvalId: approval.id, status: approval.status, approval: presentApproval(approval) })
  })

  app.get('/api/approvals/:id', { schema: { tags, params: IdParams, response: { 200: Type.Object({ approval: ApprovalDetailSchema }), ...errors } } }, async (req) => ({
    approval: presentApprovalDetail(await approvals.get(req.actor, req.params.id)),
  }))

  app.get('/api/approvals/:id/issues', { schema: { tags, params: IdParams, response: { 200: Type.Object({ issues: Type.Array(IssueSummarySchema) }), ...errors } } }, async (req) => ({
    issues: await approvals.issues(req.actor, req.params.id),
  }))

  const decision = (path: string, decide: (actor: Actor, id: string, body: { decisionNote?: string | null }) => Promise<Approval>) =>
    app.post(`/api/approvals/:id/${path}`, { preValidation: emptyBodyIsObject, schema: { tags, params: IdParams, body: DecisionBody, response: { 200: One, ...errors } } }, async (req) => ({
      approval: presentApproval(await decide(req.actor, req.params.id, req.body)),
    }))
  decision('approve', (actor, id, body) => approvals.approve(actor, id, body))
  decision('reject', (actor, id, body) => approvals.reject(actor, id, body))
  decision('request-revision', (actor, id, body) => approvals.requestRevision(actor, id, body))

  app.post('/api/approvals/:id/resubmit', { schema: { tags, params: IdParams, body: ResubmitBody, response: { 200: One, ...errors } } }, async (req) => ({
    approval: presentApproval(await approvals.resubmit(req.actor, req.params.id, req.body as { payload: Record<string, unknown> })),
  }))

  app.get('/api/approvals/:id/comments', { schema: { tags, params: IdParams, response: { 200: Type.Object({ comments: Type.Array(ApprovalCommentSchema) }), ...errors } } }, async (req) => ({
    comments: (await approvals.comments(req.actor, req.params.id)).map(presentApprovalComment),
  }))

  app.post('/api/approvals/:id/comments', { schema: { tags, params: IdParams, body: CreateApprovalCommentBody, response: { 201: Type.Object({ comment: ApprovalCommentSchema }), ...errors } } }, async (req, reply) => {
    const comment = await approvals.addComment(req.actor, req.params.id, req.body)
    return reply.status(201).send({ comment: presentApprovalComment(comment) })
  })
}
