import type { AuthedInstance } from '../services/ingest.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The instance behind the request's API key, on authenticated ingest routes. */
    towerInstance: AuthedInstance | null
  }
}

/** The instance of an authenticated ingest request (set by the auth hook before the handler runs). */
export function authedInstance(request: { towerInstance: AuthedInstance | null }): AuthedInstance {
  if (!request.towerInstance) throw new Error('ingest route without the instance auth hook')
  return request.towerInstance
}
