import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { SlawError } from '../errors.js'
import type { TowerClient } from '../contracts/tower-client.js'
import './types.js'

/**
 * Resolves `Authorization: Bearer` to `request.actor` before validation runs, so an anonymous
 * caller learns nothing about a route's schema. In `enforce` mode the tower gate answers 403
 * `instance_not_enrolled` for everything but health and the tower controls.
 */
export const authPlugin = fp(
  async (app: FastifyInstance, opts: { tower?: TowerClient }) => {
    app.decorateRequest('actor', null as never)
    app.addHook('onRequest', async (request) => {
      const config = request.routeOptions.config
      if (config.public) return
      if (!config.ungated && opts.tower?.gate) {
        const gate = opts.tower.gate()
        if (gate) throw new SlawError('instance_not_enrolled', gate.message)
      }
      const runId = request.headers['x-svc-run-id']
      // The socket's address (fastify's request.ip): failed authentications are limited per address.
      request.actor = await app.slaw.services.auth.authenticate(request.headers.authorization, Array.isArray(runId) ? runId[0] : runId, request.ip)
    })
  },
  { name: 'slaw-auth', fastify: '5.x' },
)
