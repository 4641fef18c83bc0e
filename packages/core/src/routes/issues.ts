import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, errors } from '../schemas/common.js'
import {
  CheckoutBody, CommentCursor, CreateIssueBody, IssueDetailSchema, IssueRefSchema, IssueSchema, IssueSummarySchema, ListIssuesQuery,
  UpdateIssueBody, presentIssue, presentIssueDetail,
} from '../schemas/issues.js'
import { ActivitySchema, presentActivity } from '../schemas/activity.js'
import type { IssueStatus } from '../records.js'

export const issueRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { issues } = app.slaw.services
  const tags = ['issues']
  const IssueBody = Type.Object({ issue: IssueDetailSchema })

  app.get('/api/squads/:squadId/issues', { schema: { tags, params: SquadParams, querystring: ListIssuesQuery, response: { 200: Type.Object({ issues: Type.Array(IssueSummarySchema) }), ...errors } } }, async (req) => {
    const { status, ...rest } = req.query
    return { issues: await issues.list(req.actor, req.params.squadId, { ...rest, ...(status ? { status: status.split(',') as IssueStatus[] } : {}) }) }
  })

  app.post('/api/squads/:squadId/issues', { schema: { tags, params: SquadParams, body: CreateIssueBody, response: { 201: IssueBody, ...errors } } }, async (req, reply) => {
    const issue = await issues.submitCreate(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ issue: presentIssueDetail(issue) })
  })

  app.get('/api/issues/:id', { schema: { tags, params: IdParams, response: { 200: IssueBody, ...errors } } }, async (req) => ({
    issue: presentIssueDetail(await issues.get(req.actor, req.params.id)),
  }))

  app.patch('/api/issues/:id', { schema: { tags, params: IdParams, body: UpdateIssueBody, response: { 200: IssueBody, ...errors } } }, async (req) => ({
    issue: presentIssueDetail(await issues.update(req.actor, req.params.id, req.body)),
  }))

  app.delete('/api/issues/:id', { schema: { tags, params: IdParams, response: { 200: Ok, ...errors } } }, async (req) => {
    await issues.delete(req.actor, req.params.id)
    return { ok: true as const }
  })

  app.get('/api/issues/:id/heartbeat-context', { schema: { tags, params: IdParams, response: { 200: Type.Object({ issue: IssueDetailSchema, ancestors: Type.Array(IssueRefSchema), commentCursor: CommentCursor }), ...errors } } }, async (req) => {
    const ctx = await issues.heartbeatContext(req.actor, req.params.id)
    return {
      issue: presentIssueDetail(ctx.issue),
      ancestors: ctx.ancestors,
      commentCursor: { ...ctx.commentCursor, latestCommentAt: ctx.commentCursor.latestCommentAt?.toISOString() ?? null },
    }
  })

  app.post('/api/issues/:id/checkout', { schema: { tags, params: IdParams, body: CheckoutBody, response: { 200: Type.Object({ issue: IssueSchema }), ...errors } } }, async (req) => ({
    issue: presentIssue(await issues.checkout(req.actor, req.params.id, req.body)),
  }))

  app.post('/api/issues/:id/release', { schema: { tags, params: IdParams, response: { 200: Type.Object({ issue: IssueSchema }), ...errors } } }, async (req) => ({
    issue: presentIssue(await issues.release(req.actor, req.params.id)),
  }))

  app.get('/api/issues/:id/activity', {
    schema: { tags, params: IdParams, querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, default: 100 })) }), response: { 200: Type.Object({ activity: Type.Array(ActivitySchema) }), ...errors } },
  }, async (req) => ({
    activity: (await issues.activity(req.actor, req.params.id, Math.min(req.query.limit ?? 100, 500))).map(presentActivity),
  }))
}
