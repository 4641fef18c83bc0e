import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'

/** `GET /api/health`: no key; 200 once the instance serves, 503 while starting or draining. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ state: () => 'starting' | 'ready' | 'draining' }> = async (app, opts) => {
  app.get('/api/health', {
    config: { public: true, ungated: true },
    schema: { tags: ['health'], response: { 200: Type.Object({ status: Type.Literal('ok') }), 503: Type.Object({ status: Type.String(), error: Type.String(), code: Type.String() }) } },
  }, async (_req, reply) => {
    const state = opts.state()
    if (state !== 'ready') return reply.status(503).send({ status: state, error: `The instance is ${state}.`, code: 'service_unavailable' })
    return { status: 'ok' as const }
  })
}
