import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { TowerClient } from '../contracts/tower-client.js'
import { ErrorBody } from '../schemas/common.js'
import type { Services } from '../services/index.js'
import { authPlugin } from './auth.js'
import { frameworkErrors, installErrorHandler } from './error-handler.js'
import { validatorCompiler } from './validation.js'
import { healthRoutes } from '../routes/health.js'
import { openapiRoutes } from '../routes/openapi.js'
import { squadRoutes } from '../routes/squads.js'
import { agentRoutes } from '../routes/agents.js'
import { issueRoutes } from '../routes/issues.js'
import { issueRecordRoutes } from '../routes/issue-records.js'
import { activityRoutes } from '../routes/activity.js'
import { operatorKeyRoutes } from '../routes/operator-keys.js'
import { exportRoutes } from '../routes/exports.js'
import { towerRoutes } from '../routes/tower.js'
import { skillRoutes } from '../routes/skills.js'
import { approvalRoutes } from '../routes/approvals.js'
import { goalRoutes } from '../routes/goals.js'
import { projectRoutes } from '../routes/projects.js'
import { costRoutes } from '../routes/costs.js'
import { dashboardRoutes } from '../routes/dashboard.js'
import { runRoutes } from '../routes/runs.js'
import './types.js'

export interface BuildAppOptions {
  services: Services
  logger: FastifyBaseLogger
  bodyLimit: number
  state: () => 'starting' | 'ready' | 'draining'
  tower?: TowerClient
  version: string
}

/** Every route plugin of the local API, in registration order. Later features append here. */
export const routePlugins = [squadRoutes, agentRoutes, issueRoutes, issueRecordRoutes, activityRoutes, operatorKeyRoutes, exportRoutes, towerRoutes, skillRoutes, approvalRoutes, goalRoutes, projectRoutes, costRoutes, dashboardRoutes, runRoutes]

export async function buildApp(opts: BuildAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.logger,
    bodyLimit: opts.bodyLimit,
    // Request ids in logs; never the Authorization header (pino redaction below covers logs too).
    requestIdHeader: 'x-request-id',
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    frameworkErrors,
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as FastifyInstance

  app.setValidatorCompiler(validatorCompiler())
  app.decorate('slaw', { services: opts.services })
  app.addSchema(ErrorBody)
  installErrorHandler(app)
  // JSON only: fastify's built-in text/plain parser would turn a text body into a 400; it is a 415.
  app.removeContentTypeParser('text/plain')

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'slaw local API', version: opts.version, description: 'The control plane of a slaw instance (interface A).' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  })
  await app.register(authPlugin, { ...(opts.tower ? { tower: opts.tower } : {}) })
  await app.register(healthRoutes, { state: opts.state })
  await app.register(openapiRoutes)
  for (const plugin of routePlugins) await app.register(plugin)
  return app
}
