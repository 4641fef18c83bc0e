import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Storage } from '../contracts/storage.js'
import { errors } from '../schemas/common.js'
import { RunOutputBody, RunOutputQuery } from '../schemas/events.js'
import { RunParams } from '../schemas/runs.js'
import { requireOperator } from '../services/foundation/actor.js'

/**
 * `GET /api/heartbeat-runs/{runId}/output?after=`: the kept tail of a run's live output, for a
 * run still going as for one that ended (never 404 for a run that exists). Operator only, like the
 * run's output tail.
 */
export const runOutputRoutes: FastifyPluginAsyncTypebox<{ storage: Storage }> = async (app, { storage }) => {
  const { runs } = app.slaw.services
  const getHeartbeatRunOutput = { tags: ['runs'], params: RunParams, querystring: RunOutputQuery, response: { 200: RunOutputBody, ...errors } } as const
  app.get('/api/heartbeat-runs/:runId/output', { schema: getHeartbeatRunOutput }, async (req) => {
    requireOperator(req.actor)
    const run = await runs.get(req.actor, req.params.runId)
    const after = req.query.after ?? '0'
    const chunks = await storage.runOutput.read(run.id, after, req.query.limit ?? 200)
    return {
      runId: run.id,
      status: run.status,
      chunks: chunks.map((c) => ({ id: c.id, stream: c.stream, text: c.text, offset: c.offset, at: c.createdAt.toISOString() })),
      next: chunks.length ? chunks[chunks.length - 1]!.id : /^\d{1,19}$/.test(after) ? after : '0',
      outputTail: run.outputTail ?? null,
    }
  })
}
