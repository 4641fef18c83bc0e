import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import {
  EnrollRequest,
  EnrollResponse,
  HeartbeatRequest,
  HeartbeatResponse,
  ManifestRequest,
  ManifestResponse,
  PollRequest,
  PollResponse,
  Skill,
  SkillCatalog,
  SyncRequest,
  SyncResponse,
  catalogSkillKeyPattern,
} from '@slaw/core/ingest'
import { TowerError } from '../errors.js'
import { inflateBody } from '../http/inflate.js'
import { checkProtocolVersion } from '../http/protocol-version.js'
import { keyByAddress, keyByApiKey, routeRateLimit, type RateLimitPolicy } from '../http/rate-limit.js'
import { authedInstance } from '../http/types.js'
import { bearerToken } from '../services/keys.js'
import type { TowerServices } from '../services/index.js'
import { errorResponses } from '../schemas/common.js'

const SkillKeyParams = Type.Object({ key: Type.String() })

export interface IngestRoutesOptions {
  services: TowerServices
  pollIntervalSec: number
  maxBodyBytes: number
  rateLimits: { ingest: RateLimitPolicy | null; enroll: RateLimitPolicy | null }
}

/**
 * Ingest protocol v1 under `/api/ingest/v1`. Hooks run in this order: rate limit (onRequest), the
 * instance key check (preParsing, so an unauthenticated body is never read), inflating the body
 * (preParsing), the protocol version check (preValidation), then schema validation.
 */
export function ingestRoutes(opts: IngestRoutesOptions): FastifyPluginAsync {
  const { services } = opts
  const inflate = inflateBody(opts.maxBodyBytes)
  const enrollLimit = routeRateLimit(opts.rateLimits.enroll, keyByAddress)
  const ingestLimit = routeRateLimit(opts.rateLimits.ingest, keyByApiKey)

  return async (root: FastifyInstance) => {
    const app = root.withTypeProvider<TypeBoxTypeProvider>()
    app.decorateRequest('towerInstance', null)

    const enroll = {
      body: EnrollRequest,
      response: { 200: EnrollResponse, 202: EnrollResponse, ...errorResponses(400, 401, 403, 426, 429) },
    } as const
    app.post(
      '/enroll',
      {
        config: enrollLimit,
        preParsing: inflate,
        preValidation: checkProtocolVersion,
        schema: enroll,
      },
      async (request, reply) => {
        const outcome = await services.enrollments.enroll(request.body, enrollmentSecretHeader(request.headers))
        return reply.status(outcome.state === 'active' ? 200 : 202).send({ ...outcome, pollIntervalSec: opts.pollIntervalSec })
      },
    )

    const pollEnrollment = { body: PollRequest, response: { 200: PollResponse, ...errorResponses(400, 404, 426, 429) } } as const
    app.post(
      '/enroll/poll',
      {
        config: enrollLimit,
        preParsing: inflate,
        preValidation: checkProtocolVersion,
        schema: pollEnrollment,
      },
      async (request) => ({ ...(await services.enrollments.poll(request.body.enrollmentId)), pollIntervalSec: opts.pollIntervalSec }),
    )

    await app.register(async (authed) => {
      const app = authed.withTypeProvider<TypeBoxTypeProvider>()
      app.addHook('preParsing', async (request, _reply, payload) => {
        request.towerInstance = await services.ingest.authenticate(bearerToken(request.headers.authorization))
        return payload
      })
      const authErrors = errorResponses(400, 401, 403, 426, 429)

      const heartbeat = { body: HeartbeatRequest, response: { 200: HeartbeatResponse, ...authErrors } } as const
      app.post('/heartbeat', { config: ingestLimit, preParsing: inflate, preValidation: checkProtocolVersion, schema: heartbeat }, async (request) =>
        services.ingest.heartbeat(authedInstance(request), request.body),
      )

      const sync = { body: SyncRequest, response: { 200: SyncResponse, ...authErrors } } as const
      app.post('/sync', { config: ingestLimit, preParsing: inflate, preValidation: checkProtocolVersion, schema: sync }, async (request) => services.ingest.sync(authedInstance(request), request.body))

      const manifest = { body: ManifestRequest, response: { 200: ManifestResponse, ...authErrors } } as const
      app.post('/manifest', { config: ingestLimit, preParsing: inflate, preValidation: checkProtocolVersion, schema: manifest }, async (request) =>
        services.ingest.manifest(authedInstance(request), request.body),
      )

      const skillCatalog = { response: { 200: SkillCatalog, ...authErrors } } as const
      app.get('/skills', { config: ingestLimit, schema: skillCatalog }, async (request) => {
        const instance = authedInstance(request)
        const catalog = await services.skills.catalog()
        await services.ingest.touch(instance.pk)
        return catalog
      })

      const getSkill = { params: SkillKeyParams, response: { 200: Skill, ...authErrors, ...errorResponses(404) } } as const
      app.get('/skills/:key', { config: ingestLimit, schema: getSkill }, async (request) => {
        const instance = authedInstance(request)
        if (!catalogSkillKeyPattern.test(request.params.key)) throw new TowerError('skill_not_found')
        const skill = await services.skills.published(request.params.key)
        await services.ingest.touch(instance.pk)
        return skill
      })
    })
  }
}

/** The pre-shared secret from either header: ours (`x-enrollment-secret`) or the reference tower's. */
function enrollmentSecretHeader(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers['x-enrollment-secret'] ?? headers['x-botfather-enrollment-secret']
  return Array.isArray(value) ? value[0] : value
}
