import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, errors } from '../schemas/common.js'
import { HeartbeatRunSchema, RunBody, RunListQuery, RunParams, RunReportBody, RuntimeStateSchema, TouchedIssue, WakeBody, presentRun, presentRuntimeState, presentTouched } from '../schemas/runs.js'
import type { HeartbeatRunStatus } from '../records.js'
import { isPrivileged } from '../services/actor.js'

export const runRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { runs } = app.slaw.services
  const tags = ['heartbeat-runs']

  app.post('/api/agents/:id/wake', { schema: { tags, params: IdParams, body: Type.Optional(WakeBody), response: { 202: RunBody, ...errors } } }, async (req, reply) => {
    const run = await runs.wake(req.actor, req.params.id, req.body ?? {})
    return reply.status(202).send({ run: presentRun(run) })
  })

  app.get('/api/squads/:squadId/heartbeat-runs', { schema: { tags, params: SquadParams, querystring: RunListQuery, response: { 200: Type.Object({ runs: Type.Array(HeartbeatRunSchema), nextCursor: Type.Union([Type.String(), Type.Null()]) }), ...errors } } }, async (req) => {
    const { agentId, status, cursor, limit } = req.query
    const page = await runs.list(req.actor, req.params.squadId, {
      ...(agentId !== undefined ? { agentId } : {}),
      ...(status ? { statuses: status.split(',') as HeartbeatRunStatus[] } : {}),
      ...(cursor !== undefined ? { cursor } : {}),
      ...(limit !== undefined ? { limit } : {}),
    })
    return { runs: page.runs.map((r) => presentRun(r)), nextCursor: page.nextCursor }
  })

  app.get('/api/heartbeat-runs/:runId', { schema: { tags, params: RunParams, response: { 200: RunBody, ...errors } } }, async (req) => ({
    // The output tail stays with the operator.
    run: presentRun(await runs.get(req.actor, req.params.runId), isPrivileged(req.actor)),
  }))

  app.post('/api/heartbeat-runs/:runId/cancel', { schema: { tags, params: RunParams, response: { 200: RunBody, ...errors } } }, async (req) => ({
    run: presentRun(await runs.cancel(req.actor, req.params.runId), true),
  }))

  app.post('/api/heartbeat-runs/:runId/report', { schema: { tags, params: RunParams, body: RunReportBody, response: { 200: RunBody, ...errors } } }, async (req) => ({
    run: presentRun(await runs.report(req.actor, req.params.runId, req.body)),
  }))

  app.get('/api/heartbeat-runs/:runId/issues', { schema: { tags, params: RunParams, response: { 200: Type.Object({ issues: Type.Array(TouchedIssue) }), ...errors } } }, async (req) => ({
    issues: (await runs.touchedIssues(req.actor, req.params.runId)).map(presentTouched),
  }))

  app.get('/api/issues/:id/runs', { schema: { tags, params: IdParams, response: { 200: Type.Object({ runs: Type.Array(HeartbeatRunSchema) }), ...errors } } }, async (req) => ({
    runs: (await runs.forIssue(req.actor, req.params.id)).map((r) => presentRun(r)),
  }))

  app.get('/api/agents/:id/runtime-state', { schema: { tags, params: IdParams, response: { 200: Type.Object({ runtimeState: RuntimeStateSchema }), ...errors } } }, async (req) => ({
    runtimeState: presentRuntimeState(await runs.runtimeState(req.actor, req.params.id)),
  }))

  app.post('/api/agents/:id/runtime-state/reset-session', { schema: { tags, params: IdParams, response: { 200: Ok, ...errors } } }, async (req) => {
    await runs.resetSession(req.actor, req.params.id)
    return { ok: true as const }
  })
}
