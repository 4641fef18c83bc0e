import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, commaListItems, errors } from '../schemas/common.js'
import {
  CheckoutBody,
  CommentCursor,
  CreateIssueBody,
  IssueDetailSchema,
  IssueRefSchema,
  IssueSchema,
  IssueSummarySchema,
  ListIssuesQuery,
  UpdateIssueBody,
  presentIssue,
  presentIssueDetail,
} from '../schemas/issues.js'
import { ActivitySchema, presentActivity } from '../schemas/activity.js'
import type { IssueStatus } from '../records.js'

const IssueList = Type.Object({ issues: Type.Array(IssueSummarySchema) })
const HeartbeatContextBody = Type.Object({ issue: IssueDetailSchema, ancestors: Type.Array(IssueRefSchema), commentCursor: CommentCursor })
const PlainIssueBody = Type.Object({ issue: IssueSchema })
const ActivityLimitQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, default: 100 })) })
const ActivityList = Type.Object({ activity: Type.Array(ActivitySchema) })

export const issueRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { issues } = app.slaw.services
  const tags = ['issues']
  const IssueBody = Type.Object({ issue: IssueDetailSchema })

  const listIssues = { tags, params: SquadParams, querystring: ListIssuesQuery, response: { 200: IssueList, ...errors } } as const
  app.get('/api/squads/:squadId/issues', { schema: listIssues }, async (req) => {
    const { status, ...rest } = req.query
    return {
      issues: await issues.list(req.actor, req.params.squadId, {
        ...rest,
        status: commaListItems<IssueStatus>(status),
      }),
    }
  })

  const createIssue = { tags, params: SquadParams, body: CreateIssueBody, response: { 201: IssueBody, ...errors } } as const
  app.post('/api/squads/:squadId/issues', { schema: createIssue }, async (req, reply) => {
    const issue = await issues.submitCreate(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ issue: presentIssueDetail(issue) })
  })

  const getIssue = { tags, params: IdParams, response: { 200: IssueBody, ...errors } } as const
  app.get('/api/issues/:id', { schema: getIssue }, async (req) => ({
    issue: presentIssueDetail(await issues.get(req.actor, req.params.id)),
  }))

  const updateIssue = { tags, params: IdParams, body: UpdateIssueBody, response: { 200: IssueBody, ...errors } } as const
  app.patch('/api/issues/:id', { schema: updateIssue }, async (req) => ({
    issue: presentIssueDetail(await issues.update(req.actor, req.params.id, req.body)),
  }))

  const deleteIssue = { tags, params: IdParams, response: { 200: Ok, ...errors } } as const
  app.delete('/api/issues/:id', { schema: deleteIssue }, async (req) => {
    await issues.delete(req.actor, req.params.id)
    return { ok: true as const }
  })

  const getHeartbeatContext = { tags, params: IdParams, response: { 200: HeartbeatContextBody, ...errors } } as const
  app.get('/api/issues/:id/heartbeat-context', { schema: getHeartbeatContext }, async (req) => {
    const ctx = await issues.heartbeatContext(req.actor, req.params.id)
    return {
      issue: presentIssueDetail(ctx.issue),
      ancestors: ctx.ancestors,
      commentCursor: { ...ctx.commentCursor, latestCommentAt: ctx.commentCursor.latestCommentAt?.toISOString() ?? null },
    }
  })

  const checkoutIssue = { tags, params: IdParams, body: CheckoutBody, response: { 200: PlainIssueBody, ...errors } } as const
  app.post('/api/issues/:id/checkout', { schema: checkoutIssue }, async (req) => ({
    issue: presentIssue(await issues.submitCheckout(req.actor, req.params.id, req.body)),
  }))

  const releaseIssue = { tags, params: IdParams, response: { 200: PlainIssueBody, ...errors } } as const
  app.post('/api/issues/:id/release', { schema: releaseIssue }, async (req) => ({
    issue: presentIssue(await issues.release(req.actor, req.params.id)),
  }))

  const issueActivity = { tags, params: IdParams, querystring: ActivityLimitQuery, response: { 200: ActivityList, ...errors } } as const
  app.get('/api/issues/:id/activity', { schema: issueActivity }, async (req) => ({
    activity: (await issues.activity(req.actor, req.params.id, Math.min(req.query.limit ?? 100, 500))).map(presentActivity),
  }))
}
