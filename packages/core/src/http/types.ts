import type { Actor } from '../services/foundation/actor.js'
import type { Services } from '../services/index.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller; set by the auth hook on every non-public route. */
    actor: Actor
    /** Set when the console session cookie authenticated the request (docs/console.md). */
    consoleSession: { token: string; expiresAt: Date } | null
  }
  interface FastifyInstance {
    /** The instance's domain services. */
    slaw: { services: Services }
  }
  interface FastifyContextConfig {
    /** Routes that need no bearer token (health, public webhooks). */
    public?: boolean
    /** Routes the tower gate lets through while the instance is not enrolled. */
    ungated?: boolean
  }
}
export {}
