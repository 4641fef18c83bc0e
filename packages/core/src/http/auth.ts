import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { SlawError } from '../errors.js'
import type { TowerClient } from '../contracts/tower-client.js'
import { clearSessionCookie, readCookie, sameOriginOrSafe, sessionCookieName } from './console-cookie.js'
import './types.js'

/** The console session cookie authenticates the local API only (not `/metrics`). */
const isCookieScope = (url: string): boolean => url.startsWith('/api/')

/**
 * Resolves `Authorization: Bearer` (or, without one, the console session cookie on `/api/*`; a
 * cookie-authenticated mutation must come from this server's own origin) to `request.actor` before
 * validation runs, so an anonymous
 * caller learns nothing about a route's schema. In `enforce` mode the tower gate answers 403
 * `instance_not_enrolled` for everything but health, the OpenAPI document and the tower controls,
 * public routes (the trigger fire URL) included.
 */
export const authPlugin = fp(
  async (app: FastifyInstance, opts: { tower?: TowerClient }) => {
    app.decorateRequest('actor', null as never)
    app.decorateRequest('consoleSession', null)
    app.addHook('onRequest', async (request, reply) => {
      const config = request.routeOptions.config
      // Public routes are gated too (the trigger fire URL creates issues); only health and the
      // OpenAPI document are public and ungated.
      if (!config.ungated && opts.tower?.gate) {
        const gate = opts.tower.gate()
        if (gate) throw new SlawError('instance_not_enrolled', gate.message)
      }
      if (config.public) return
      // A browser signed in to the console sends its session cookie and no Authorization header.
      if (request.headers.authorization === undefined && isCookieScope(request.url)) {
        const token = readCookie(request.headers.cookie, sessionCookieName)
        if (token !== undefined) {
          let session: Awaited<ReturnType<typeof app.slaw.services.consoleSessions.authenticate>>
          try {
            session = await app.slaw.services.consoleSessions.authenticate(token)
          } catch (err) {
            // A dead session's cookie is dropped, so the browser stops sending it.
            void reply.header('set-cookie', clearSessionCookie(request))
            throw err
          }
          if (!sameOriginOrSafe(request)) {
            throw new SlawError('forbidden', "Cross-site request refused: a console request that changes something must carry an Origin header equal to this server's origin.")
          }
          request.actor = session.actor
          request.consoleSession = { token, expiresAt: session.expiresAt }
          return
        }
      }
      const runId = request.headers['x-svc-run-id']
      // The socket's address (fastify's request.ip): failed authentications are limited per address.
      request.actor = await app.slaw.services.auth.authenticate(request.headers.authorization, Array.isArray(runId) ? runId[0] : runId, request.ip)
    })
  },
  { name: 'slaw-auth', fastify: '5.x' },
)
