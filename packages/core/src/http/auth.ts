import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { SlawError } from '../errors.js'
import type { TowerClient } from '../contracts/tower-client.js'
import './types.js'

/**
 * Resolves `Authorization: Bearer` to `request.actor` before validation runs, so an anonymous
 * caller learns nothing about a route's schema. In `enforce` mode the tower gate answers 403
 * `instance_not_enrolled` for everything but health, the OpenAPI document and the tower controls,
 * public routes (the trigger fire URL) included.
 */
export const authPlugin = fp(
  async (app: FastifyInstance, opts: { tower?: TowerClient }) => {
    app.decorateRequest('actor', null as never)
    app.addHook('onRequest', async (request) => {
      const config = request.routeOptions.config
      // Public routes are gated too (the trigger fire URL creates issues); only health and the
      // OpenAPI document are public and ungated.
      if (!config.ungated && opts.tower?.gate) {
        const gate = opts.tower.gate()
        if (gate) throw new SlawError('instance_not_enrolled', gate.message)
      }
      if (config.public) return
      const runId = request.headers['x-svc-run-id']
      // The socket's address (fastify's request.ip): failed authentications are limited per address.
      request.actor = await app.slaw.services.auth.authenticate(request.headers.authorization, Array.isArray(runId) ? runId[0] : runId, request.ip)
    })
  },
  { name: 'slaw-auth', fastify: '5.x' },
)
