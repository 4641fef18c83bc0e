import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, commaListItems, errors } from '../schemas/common.js'
import {
  EnvironmentCheckSchema,
  HeartbeatRunSchema,
  RunBody,
  RunListQuery,
  RunParams,
  RunReportBody,
  RuntimeStateSchema,
  TouchedIssue,
  WakeBody,
  presentRun,
  presentRuntimeState,
  presentTouched,
} from '../schemas/runs.js'
import type { HeartbeatRunStatus } from '../records.js'
import { isPrivileged } from '../services/foundation/actor.js'

const HeartbeatRunPage = Type.Object({ runs: Type.Array(HeartbeatRunSchema), nextCursor: Type.Union([Type.String(), Type.Null()]) })
const TouchedIssueList = Type.Object({ issues: Type.Array(TouchedIssue) })
const HeartbeatRunList = Type.Object({ runs: Type.Array(HeartbeatRunSchema) })
const RuntimeStateBody = Type.Object({ runtimeState: RuntimeStateSchema })

export const runRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { runs } = app.slaw.services
  const tags = ['heartbeat-runs']

  const wakeAgent = { tags, params: IdParams, body: Type.Optional(WakeBody), response: { 202: RunBody, ...errors } } as const
  app.post('/api/agents/:id/wake', { schema: wakeAgent }, async (req, reply) => {
    const run = await runs.wake(req.actor, req.params.id, req.body ?? {})
    return reply.status(202).send({ run: presentRun(run) })
  })

  const listRuns = { tags, params: SquadParams, querystring: RunListQuery, response: { 200: HeartbeatRunPage, ...errors } } as const
  app.get('/api/squads/:squadId/heartbeat-runs', { schema: listRuns }, async (req) => {
    const { agentId, status, cursor, limit } = req.query
    const page = await runs.list(req.actor, req.params.squadId, {
      ...(agentId !== undefined ? { agentId } : {}),
      statuses: commaListItems<HeartbeatRunStatus>(status),
      ...(cursor !== undefined ? { cursor } : {}),
      ...(limit !== undefined ? { limit } : {}),
    })
    return { runs: page.runs.map((r) => presentRun(r)), nextCursor: page.nextCursor }
  })

  const getRun = { tags, params: RunParams, response: { 200: RunBody, ...errors } } as const
  app.get('/api/heartbeat-runs/:runId', { schema: getRun }, async (req) => ({
    // The output tail stays with the operator.
    run: presentRun(await runs.get(req.actor, req.params.runId), isPrivileged(req.actor)),
  }))

  const cancelRun = { tags, params: RunParams, response: { 200: RunBody, ...errors } } as const
  app.post('/api/heartbeat-runs/:runId/cancel', { schema: cancelRun }, async (req) => ({
    run: presentRun(await runs.cancel(req.actor, req.params.runId), true),
  }))

  const reportRun = { tags, params: RunParams, body: RunReportBody, response: { 200: RunBody, ...errors } } as const
  app.post('/api/heartbeat-runs/:runId/report', { schema: reportRun }, async (req) => ({
    run: presentRun(await runs.report(req.actor, req.params.runId, req.body)),
  }))

  const runIssues = { tags, params: RunParams, response: { 200: TouchedIssueList, ...errors } } as const
  app.get('/api/heartbeat-runs/:runId/issues', { schema: runIssues }, async (req) => ({
    issues: (await runs.touchedIssues(req.actor, req.params.runId)).map(presentTouched),
  }))

  const issueRuns = { tags, params: IdParams, response: { 200: HeartbeatRunList, ...errors } } as const
  app.get('/api/issues/:id/runs', { schema: issueRuns }, async (req) => ({
    runs: (await runs.forIssue(req.actor, req.params.id)).map((r) => presentRun(r)),
  }))

  const getRuntimeState = { tags, params: IdParams, response: { 200: RuntimeStateBody, ...errors } } as const
  app.get('/api/agents/:id/runtime-state', { schema: getRuntimeState }, async (req) => ({
    runtimeState: presentRuntimeState(await runs.runtimeState(req.actor, req.params.id)),
  }))

  const resetSession = { tags, params: IdParams, response: { 200: Ok, ...errors } } as const
  const checkEnvironment = { tags, params: IdParams, response: { 200: Type.Object({ environment: EnvironmentCheckSchema }), ...errors } } as const
  app.post('/api/agents/:id/check-environment', { schema: checkEnvironment }, async (req) => ({
    environment: await runs.checkEnvironment(req.actor, req.params.id),
  }))

  app.post('/api/agents/:id/runtime-state/reset-session', { schema: resetSession }, async (req) => {
    await runs.resetSession(req.actor, req.params.id)
    return { ok: true as const }
  })
}
