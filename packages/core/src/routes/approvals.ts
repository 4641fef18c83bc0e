import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { preValidationHookHandler } from 'fastify'
import { IdParams, SquadParams, commaListItems, errors } from '../schemas/common.js'
import {
  ApprovalCommentSchema,
  ApprovalDetailSchema,
  ApprovalListQuery,
  ApprovalSchema,
  CreateApprovalBody,
  CreateApprovalCommentBody,
  DecisionBody,
  HireAccepted,
  HireBody,
  ResubmitBody,
  presentApproval,
  presentApprovalComment,
  presentApprovalDetail,
} from '../schemas/approvals.js'
import { IssueSummarySchema } from '../schemas/issues.js'
import type { Approval, ApprovalStatus } from '../contracts/governance.js'
import type { Actor } from '../services/foundation/actor.js'

const ApprovalList = Type.Object({ approvals: Type.Array(ApprovalSchema) })
const ApprovalDetailBody = Type.Object({ approval: ApprovalDetailSchema })
const IssueList = Type.Object({ issues: Type.Array(IssueSummarySchema) })
const ApprovalCommentList = Type.Object({ comments: Type.Array(ApprovalCommentSchema) })
const ApprovalCommentBody = Type.Object({ comment: ApprovalCommentSchema })

/** Decisions may be posted without a body (the note is optional). */
const emptyBodyIsObject: preValidationHookHandler = async (req) => {
  if (req.body === undefined || req.body === null) req.body = {}
}

export const approvalRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { approvals } = app.slaw.services
  const tags = ['approvals']
  const One = Type.Object({ approval: ApprovalSchema })

  const listApprovals = { tags, params: SquadParams, querystring: ApprovalListQuery, response: { 200: ApprovalList, ...errors } } as const
  app.get('/api/squads/:squadId/approvals', { schema: listApprovals }, async (req) => {
    const { status, ...page } = req.query
    const list = await approvals.list(req.actor, req.params.squadId, {
      ...page,
      statuses: commaListItems<ApprovalStatus>(status),
    })
    return { approvals: list.map((a) => presentApproval(a, req.actor)) }
  })

  const createApproval = { tags, params: SquadParams, body: CreateApprovalBody, response: { 201: ApprovalDetailBody, ...errors } } as const
  app.post('/api/squads/:squadId/approvals', { schema: createApproval }, async (req, reply) => {
    const approval = await approvals.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ approval: presentApprovalDetail(approval, req.actor) })
  })

  const hireAgent = { tags: [...tags, 'agents'], params: SquadParams, body: HireBody, response: { 202: HireAccepted, ...errors } } as const
  app.post('/api/squads/:squadId/agent-hires', { schema: hireAgent }, async (req, reply) => {
    const approval = await approvals.hire(req.actor, req.params.squadId, req.body)
    return reply.status(202).send({ approvalId: approval.id, status: approval.status, approval: presentApproval(approval, req.actor) })
  })

  const getApproval = { tags, params: IdParams, response: { 200: ApprovalDetailBody, ...errors } } as const
  app.get('/api/approvals/:id', { schema: getApproval }, async (req) => ({
    approval: presentApprovalDetail(await approvals.get(req.actor, req.params.id), req.actor),
  }))

  const approvalIssues = { tags, params: IdParams, response: { 200: IssueList, ...errors } } as const
  app.get('/api/approvals/:id/issues', { schema: approvalIssues }, async (req) => ({
    issues: await approvals.issues(req.actor, req.params.id),
  }))

  const decideApproval = { tags, params: IdParams, body: DecisionBody, response: { 200: One, ...errors } } as const
  const decision = (path: string, decide: (actor: Actor, id: string, body: { decisionNote?: string | null }) => Promise<Approval>) =>
    app.post(`/api/approvals/:id/${path}`, { preValidation: emptyBodyIsObject, schema: decideApproval }, async (req) => ({
      approval: presentApproval(await decide(req.actor, req.params.id, req.body), req.actor),
    }))
  decision('approve', (actor, id, body) => approvals.approve(actor, id, body))
  decision('reject', (actor, id, body) => approvals.reject(actor, id, body))
  decision('request-revision', (actor, id, body) => approvals.requestRevision(actor, id, body))

  const resubmitApproval = { tags, params: IdParams, body: ResubmitBody, response: { 200: One, ...errors } } as const
  app.post('/api/approvals/:id/resubmit', { schema: resubmitApproval }, async (req) => ({
    approval: presentApproval(await approvals.resubmit(req.actor, req.params.id, req.body as { payload: Record<string, unknown> }), req.actor),
  }))

  const listApprovalComments = { tags, params: IdParams, response: { 200: ApprovalCommentList, ...errors } } as const
  app.get('/api/approvals/:id/comments', { schema: listApprovalComments }, async (req) => ({
    comments: (await approvals.comments(req.actor, req.params.id)).map(presentApprovalComment),
  }))

  const addApprovalComment = {
    tags,
    params: IdParams,
    body: CreateApprovalCommentBody,
    response: { 201: ApprovalCommentBody, ...errors },
  } as const
  app.post('/api/approvals/:id/comments', { schema: addApprovalComment }, async (req, reply) => {
    const comment = await approvals.addComment(req.actor, req.params.id, req.body)
    return reply.status(201).send({ comment: presentApprovalComment(comment) })
  })
}
