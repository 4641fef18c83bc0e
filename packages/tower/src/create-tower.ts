import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyLoggerOptions, type FastifyReply } from 'fastify'
import rateLimit from '@fastify/rate-limit'
import { Type } from '@sinclair/typebox'
import websocket from '@fastify/websocket'
import { DEFAULT_POLL_INTERVAL_SEC, INGEST_BASE_PATH, MAX_BODY_BYTES, MAX_LIVE_FRAME_BYTES } from '@slaw/core/ingest'
import { openDatabase, type TowerDb } from './db/database.js'
import { TowerError } from './errors.js'
import { installErrorHandler } from './http/error-handler.js'
import { defaultRateLimits, keyByAddress, rateLimitedError, type RateLimitOptions } from './http/rate-limit.js'
import { validatorCompiler } from './http/validation.js'
import { adminRoutes } from './routes/admin/index.js'
import { ingestRoutes } from './routes/ingest.js'
import { createLive, liveRoutes, type TowerLive } from './routes/live.js'
import type { AutoApproveRuleInput } from './services/auto-approve.js'
import { createServices, type TowerServices } from './services/index.js'
import { consoleSessions } from './services/console-sessions.js'
import { fleetPageRoutes } from './routes/fleet-page.js'
import './http/types.js'

export interface TowerOptions {
  /** postgres://… selects PostgreSQL (postgres.js); several tower nodes may share it. */
  databaseUrl?: string | undefined
  /** Embedded PGlite when databaseUrl is unset: a directory, or `memory://`. Default `./.slaw-tower`. */
  dataDir?: string | undefined
  /** Bearer token of the admin API (`/api/admin`), at least 8 characters. Required. */
  adminKey: string
  /** A pre-shared secret POST /enroll must present (body `enrollmentSecret`, header `x-enrollment-secret` or `x-botfather-enrollment-secret`). */
  enrollmentSecret?: string | undefined
  /** `true` approves every enrollment; or rules (by hostname glob, machine ids) added to those stored through the admin API. */
  autoApprove?: boolean | AutoApproveRuleInput[] | undefined
  /** Request rates; `false` turns rate limiting off. Defaults in docs/tower.md. */
  rateLimit?: false | RateLimitOptions | undefined
  /**
   * `true` for pino JSON lines at info on stdout, pino options (`{ level, stream }`), a pino logger
   * of your own, or false (default). Keys and secrets are never logged.
   */
  logger?: boolean | FastifyBaseLogger | FastifyLoggerOptions | undefined
  /** Trust X-Forwarded-* from a reverse proxy (client addresses for rate limits). Default false. */
  trustProxy?: boolean | string | string[] | undefined
  /** The tower's clock for heartbeat times and the interval learnt from them; tests pass a fake one. Default: the system clock. */
  now?: (() => Date) | undefined
  /** pollIntervalSec told to pending enrollments. Default 10. */
  pollIntervalSec?: number | undefined
  /** Largest request body, inflated. Default 32 MiB. */
  maxBodyBytes?: number | undefined
  /** How long a fleet page sign-in lasts, in hours (above 0, at most 720). Default 12. */
  consoleSessionHours?: number | undefined
}

export interface TowerListenOptions {
  /** Default 3200. */
  port?: number
  /** Default 127.0.0.1. */
  host?: string
}

export interface Tower {
  /** The fastify app, for `inject` in tests or extra routes. */
  app: FastifyInstance
  /** The database (Kysely). */
  db: TowerDb
  /** The domain services, usable without HTTP. */
  services: TowerServices
  /** Live channel events (`fact`, `open`, `close`). */
  live: TowerLive
  /** Starts serving; resolves to the address, e.g. `http://127.0.0.1:3200`. */
  listen(options?: TowerListenOptions): Promise<string>
  /** Stops taking requests, closes live sockets, finishes in-flight requests, then closes the database. */
  close(): Promise<void>
}

/** Never a key or secret in a log line, whatever a custom serializer prints. */
const redact = [
  'req.headers.authorization',
  'req.headers["x-enrollment-secret"]',
  'req.headers["x-botfather-enrollment-secret"]',
  'headers.authorization',
  'headers["x-enrollment-secret"]',
  'headers["x-botfather-enrollment-secret"]',
]

const isLogger = (value: object): value is FastifyBaseLogger => typeof (value as { info?: unknown }).info === 'function' && typeof (value as { child?: unknown }).child === 'function'

/**
 * A reference control tower serving ingest protocol v1 and an admin API.
 *
 * ```ts
 * const tower = await createTower({ dataDir: 'memory://', adminKey: 'change-me-now', autoApprove: true })
 * await tower.listen({ port: 3200 })
 * ```
 */
export async function createTower(options: TowerOptions): Promise<Tower> {
  if (typeof options.adminKey !== 'string' || options.adminKey.length < 8) throw new TypeError('createTower: adminKey must be a string of at least 8 characters')
  const maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES
  const limits = options.rateLimit === false ? null : { ...defaultRateLimits, ...(options.rateLimit ?? {}) }
  const autoApprove: AutoApproveRuleInput[] = options.autoApprove === true ? [{ kind: 'all' }] : Array.isArray(options.autoApprove) ? options.autoApprove : []

  const database = await openDatabase({ databaseUrl: options.databaseUrl, dataDir: options.dataDir })
  const services = createServices(database.db, { enrollmentSecret: options.enrollmentSecret, autoApprove, now: options.now })
  const live = createLive()
  const sessions = consoleSessions(database.db, { adminKey: options.adminKey, hours: options.consoleSessionHours, now: options.now })

  const logger = options.logger ?? false
  const app = Fastify({
    ...(typeof logger === 'boolean' ? { logger: logger ? { level: 'info', redact } : false } : isLogger(logger) ? { loggerInstance: logger } : { logger: { level: 'info', ...logger, redact } }),
    bodyLimit: maxBodyBytes,
    trustProxy: options.trustProxy ?? false,
    requestIdHeader: 'x-request-id',
    routerOptions: { maxParamLength: 500 },
    frameworkErrors: (error, request, reply) => {
      // A URL the router cannot take (bad percent-encoding, an overlong id) names nothing that exists.
      const skills = request.url.startsWith(`${INGEST_BASE_PATH}/skills/`)
      const out = new TowerError(skills ? 'skill_not_found' : 'not_found', skills ? undefined : `No route ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}.`)
      request.log.info({ code: error.code }, 'unroutable url')
      void (reply as FastifyReply).status(out.statusCode).send(out.toJSON())
    },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  }) as unknown as FastifyInstance

  try {
    app.setValidatorCompiler(validatorCompiler())
    installErrorHandler(app)
    if (limits) {
      // Global: every route (admin, health) gets the admin policy unless it sets its own.
      await app.register(rateLimit, {
        global: true,
        max: limits.admin.max,
        timeWindow: limits.admin.timeWindowMs,
        keyGenerator: keyByAddress,
        errorResponseBuilder: rateLimitedError,
      })
    }
    await app.register(websocket, { options: { maxPayload: MAX_LIVE_FRAME_BYTES } })
    app.get('/api/health', { schema: { response: { 200: Type.Object({ status: Type.Literal('ok') }) } } }, async () => ({ status: 'ok' as const }))
    await app.register(
      ingestRoutes({
        services,
        pollIntervalSec: options.pollIntervalSec ?? DEFAULT_POLL_INTERVAL_SEC,
        maxBodyBytes,
        rateLimits: { ingest: limits?.ingest ?? null, enroll: limits?.enroll ?? null },
      }),
      { prefix: INGEST_BASE_PATH },
    )
    await app.register(liveRoutes({ services, live, rateLimit: limits?.enroll ?? null }), { prefix: INGEST_BASE_PATH })
    await app.register(adminRoutes({ services, adminKey: options.adminKey, sessions }), { prefix: '/api/admin' })
    // The fleet page at `/` and its sign-in (docs/tower.md, Fleet page).
    await app.register(fleetPageRoutes({ services, sessions, db: database.db }))
    await app.ready()
  } catch (err) {
    await app.close().catch(() => undefined)
    await database.close()
    throw err
  }

  let closing: Promise<void> | null = null
  return {
    app,
    db: database.db,
    services,
    live,
    async listen(listen: TowerListenOptions = {}) {
      return app.listen({ port: listen.port ?? 3200, host: listen.host ?? '127.0.0.1' })
    },
    close() {
      closing ??= (async () => {
        try {
          await app.close()
        } finally {
          await database.close()
        }
      })()
      return closing
    },
  }
}
