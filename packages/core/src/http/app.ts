import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { TowerClient } from '../contracts/tower-client.js'
import { ErrorBody } from '../schemas/common.js'
import type { Services } from '../services/index.js'
import type { HealthReport } from '../services/foundation/health.js'
import type { SlawMetrics } from './metrics.js'
import { authPlugin } from './auth.js'
import { clientErrorHandler, frameworkErrors, installErrorHandler } from './error-handler.js'
import { validatorCompiler, warmValidators } from './validation.js'
import { lazySerializerFactory } from './serialization.js'
import { installJsonBodyParser } from './json-body.js'
import { openapiDocument } from './openapi-document.js'
import { lazyRequestLogger } from './request-logger.js'
import { healthRoutes } from '../routes/health.js'
import { openapiRoutes } from '../routes/openapi.js'
import { squadRoutes } from '../routes/squads.js'
import { agentRoutes } from '../routes/agents.js'
import { issueRoutes } from '../routes/issues.js'
import { issueRecordRoutes } from '../routes/issue-records.js'
import { activityRoutes } from '../routes/activity.js'
import { operatorKeyRoutes } from '../routes/operator-keys.js'
import { consoleSessionRoutes } from '../routes/console.js'
import { exportRoutes } from '../routes/exports.js'
import { towerRoutes } from '../routes/tower.js'
import { skillRoutes } from '../routes/skills.js'
import { approvalRoutes } from '../routes/approvals.js'
import { goalRoutes } from '../routes/goals.js'
import { projectRoutes } from '../routes/projects.js'
import { costRoutes } from '../routes/costs.js'
import { dashboardRoutes } from '../routes/dashboard.js'
import { routineRoutes } from '../routes/routines.js'
import { routineTriggerRoutes } from '../routes/routine-triggers.js'
import { secretRoutes } from '../routes/secrets.js'
import { secretProviderRoutes } from '../routes/secret-providers.js'
import { runRoutes } from '../routes/runs.js'
import { eventRoutes } from '../routes/events.js'
import { runOutputRoutes } from '../routes/run-output.js'
import type { EventHub } from '../services/events/event-hub.js'
import type { Storage } from '../contracts/storage.js'
import './types.js'

export interface BuildAppOptions {
  services: Services
  logger: FastifyBaseLogger
  bodyLimit: number
  state: () => 'starting' | 'ready' | 'draining'
  tower?: TowerClient
  version: string
  /** Probes the parts for `GET /api/health`. */
  health?: () => Promise<HealthReport>
  /** Counts requests; `route: true` also serves `GET /metrics` on this app (Operator key). */
  metrics?: { metrics: SlawMetrics; route: boolean }
  /** Live events (`GET /api/squads/{id}/events`); its streams end when the app closes. */
  events?: { hub: EventHub; storage: Storage }
}

/** Every route plugin of the local API, in registration order. Later features append here. */
export const routePlugins = [
  squadRoutes,
  agentRoutes,
  issueRoutes,
  issueRecordRoutes,
  activityRoutes,
  operatorKeyRoutes,
  consoleSessionRoutes,
  exportRoutes,
  towerRoutes,
  skillRoutes,
  approvalRoutes,
  goalRoutes,
  projectRoutes,
  costRoutes,
  dashboardRoutes,
  routineRoutes,
  routineTriggerRoutes,
  secretRoutes,
  secretProviderRoutes,
  runRoutes,
]

export async function buildApp(opts: BuildAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.logger,
    bodyLimit: opts.bodyLimit,
    // Request ids in logs; never the Authorization header (pino redaction below covers logs too).
    requestIdHeader: 'x-request-id',
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // fastify's two info lines per request cost about a tenth of a request's CPU (bench/RESULTS.md):
    // one access line per request, at debug.
    logController: new AccessLog(),
    // A request's child logger is made when the request logs something (request-logger.ts).
    childLoggerFactory: lazyRequestLogger,
    frameworkErrors,
    clientErrorHandler,
    // Validators and response serializers are compiled on first use (validation.ts, serialization.ts).
    // Naming both factories also keeps fastify from loading its default Ajv compiler (and Ajv's JTD
    // build with it) at start, only to be replaced.
    // (fastify types the factory as Ajv's; it calls it as any factory of a schema compiler.)
    schemaController: { compilersFactory: { buildValidator: (() => validatorCompiler()) as never, buildSerializer: lazySerializerFactory } },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as FastifyInstance

  app.decorate('slaw', { services: opts.services })
  app.addSchema(ErrorBody)
  installErrorHandler(app)
  // JSON only: fastify's built-in text/plain parser would turn a text body into a 400; it is a 415.
  app.removeContentTypeParser('text/plain')
  installJsonBodyParser(app)

  // Generated on first request (openapi-document.ts); every route is recorded as it is added.
  const openapi = openapiDocument(app, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'slaw local API', version: opts.version, description: 'The HTTP API of a slaw instance: squads, agents, issues, runs, approvals, costs, routines, secrets and live events.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  })
  app.addHook('onRoute', openapi.collect)
  // Ajv's one-time cost off the first request: a moment after listening, once the first health
  // checks are answered (validation.ts).
  app.addHook('onListen', (done) => {
    setTimeout(warmValidators, 250).unref()
    done()
  })
  await app.register(authPlugin, { ...(opts.tower ? { tower: opts.tower } : {}) })
  await app.register(healthRoutes, { state: opts.state, ...(opts.health ? { check: opts.health } : {}) })
  await app.register(openapiRoutes, { document: openapi.document })
  if (opts.metrics) {
    opts.metrics.metrics.attach(app)
    if (opts.metrics.route) opts.metrics.metrics.route(app)
  }
  for (const plugin of routePlugins) await app.register(plugin)
  if (opts.events) {
    const { hub } = opts.events
    await app.register(eventRoutes, opts.events)
    await app.register(runOutputRoutes, opts.events)
    // Streams never go idle: end them before the server waits for its connections.
    app.addHook('preClose', async () => {
      await hub.close()
    })
  }
  return app
}

/**
 * One line per answered request at debug (method, scrubbed URL, status, milliseconds) instead of
 * fastify's "incoming request" and "request completed" at info; a failed response stays at error.
 */
class AccessLog extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored')
    else reply.log.debug({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed')
  }
}
