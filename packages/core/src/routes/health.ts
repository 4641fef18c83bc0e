import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { HealthReport } from '../services/foundation/health.js'

const Part = Type.Object({ status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]), reason: Type.Optional(Type.String()) })
const Parts = Type.Object({ storage: Part, locks: Part, tower: Part, jobs: Part }, { $id: 'HealthParts', title: 'HealthParts' })
const HealthOk = Type.Object({ status: Type.Literal('ok'), parts: Type.Optional(Parts) }, { $id: 'Health', title: 'Health' })
const HealthUnavailable = Type.Object({ status: Type.String(), error: Type.String(), code: Type.String(), parts: Type.Optional(Parts) }, { $id: 'HealthUnavailable', title: 'HealthUnavailable' })

export interface HealthRouteOptions {
  state: () => 'starting' | 'ready' | 'draining'
  /** Probes the parts; without it the answer carries no `parts`. */
  check?: () => Promise<HealthReport>
}

/**
 * `GET /api/health`: no key. 200 `{status: "ok", parts}` once the instance serves and its storage
 * answers (a degraded lock service, tower or job runner is reported in `parts` but still 200: the
 * instance serves); 503 while starting or draining, or when storage does not answer.
 */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthRouteOptions> = async (app, opts) => {
  const getHealth = { tags: ['health'], response: { 200: HealthOk, 503: HealthUnavailable } } as const
  app.get('/api/health', { config: { public: true, ungated: true }, schema: getHealth }, async (_req, reply) => {
    const state = opts.state()
    if (state !== 'ready') return reply.status(503).send({ status: state, error: `The instance is ${state}.`, code: 'service_unavailable' })
    if (!opts.check) return { status: 'ok' as const }
    const parts = await opts.check()
    if (parts.storage.status !== 'ok') {
      return reply.status(503).send({ status: 'degraded', error: 'The database is unavailable.', code: 'database_unavailable', parts })
    }
    return { status: 'ok' as const, parts }
  })
}
