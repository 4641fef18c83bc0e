import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { TowerError } from '../../errors.js'
import { bearerToken, secretsEqual } from '../../services/keys.js'
import type { TowerServices } from '../../services/index.js'
import type { ConsoleSessions } from '../../services/console-sessions.js'
import { sameOriginOrSafe } from '@slaw/core'
import { crossSite, sessionToken } from '../fleet-page.js'
import { directiveRoutes } from './directives.js'
import { enrollmentRoutes } from './enrollments.js'
import { instanceRoutes } from './instances.js'
import { limitRoutes } from './limits.js'
import { ruleRoutes } from './rules.js'
import { skillRoutes } from './skills.js'
import { syncedRoutes } from './synced.js'

export interface AdminRoutesOptions {
  services: TowerServices
  adminKey: string
  /** Fleet page sessions: their cookie stands in for the admin key (mutations from the tower's own origin only). */
  sessions: ConsoleSessions
}

type AdminPlugin = (services: TowerServices) => FastifyPluginAsync

/** Every admin route plugin, in registration order. */
const adminPlugins: AdminPlugin[] = [instanceRoutes, enrollmentRoutes, ruleRoutes, skillRoutes, limitRoutes, directiveRoutes, syncedRoutes]

/**
 * The admin API under `/api/admin`: `Authorization: Bearer <adminKey>`, compared in constant time,
 * or (without that header) the fleet page's session cookie, whose mutations must carry the tower's
 * own Origin.
 * The check runs before the body is read (preParsing) and after the rate limit (onRequest), so
 * guessing the key is rate-limited too.
 */
export function adminRoutes(opts: AdminRoutesOptions): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    app.addHook('preParsing', async (request, _reply, payload) => {
      // Without an Authorization header, the fleet page's session cookie (docs/tower.md, Fleet page).
      const cookie = sessionToken(request)
      if (cookie !== undefined && (await opts.sessions.check(cookie))) {
        if (!sameOriginOrSafe(request)) throw crossSite()
        return payload
      }
      const token = bearerToken(request.headers.authorization)
      if (!token || !secretsEqual(token, opts.adminKey)) throw new TowerError('unauthorized', 'Missing or invalid admin key.')
      return payload
    })
    for (const plugin of adminPlugins) await app.register(plugin(opts.services))
  }
}
