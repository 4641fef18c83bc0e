import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { SlawError } from '../errors.js'
import { Ok, errors } from '../schemas/common.js'
import { ConsoleSessionSchema, ConsoleSessionsRevoked, ConsoleSignInBody } from '../schemas/console.js'
import { clearSessionCookie, sessionCookie } from '../http/console-cookie.js'

/**
 * Console sign-in sessions (docs/console.md). Sign-in is public (the key is in the body) and, like
 * the tower controls, ungated: an Operator must be able to sign in to see why the instance waits
 * for its enrollment. The others authenticate like any route (the cookie or a bearer key).
 */
export const consoleSessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { consoleSessions } = app.slaw.services
  const tags = ['console']
  const errorRef = Type.Ref('ErrorBody')

  const signIn = { tags, security: [], body: ConsoleSignInBody, response: { 200: ConsoleSessionSchema, ...errors, 429: errorRef } } as const
  app.post('/api/console/session', { config: { public: true, ungated: true }, schema: signIn }, async (req, reply) => {
    const { token, expiresAt, maxAgeSec } = await consoleSessions.signIn(req.body.operatorKey, req.ip)
    void reply.header('set-cookie', sessionCookie(req, token, maxAgeSec))
    void reply.header('cache-control', 'no-store')
    return { session: { expiresAt: expiresAt.toISOString() } }
  })

  const getSession = { tags, response: { 200: ConsoleSessionSchema, ...errors } } as const
  app.get('/api/console/session', { config: { ungated: true }, schema: getSession }, async (req, reply) => {
    if (!req.consoleSession) throw new SlawError('unauthorized', 'Not signed in to the console (no session cookie).')
    void reply.header('cache-control', 'no-store')
    return { session: { expiresAt: req.consoleSession.expiresAt.toISOString() } }
  })

  const signOut = { tags, response: { 200: Ok, ...errors } } as const
  app.delete('/api/console/session', { config: { ungated: true }, schema: signOut }, async (req, reply) => {
    if (!req.consoleSession) throw new SlawError('unauthorized', 'Not signed in to the console (no session cookie).')
    await consoleSessions.signOut(req.consoleSession.token)
    void reply.header('set-cookie', clearSessionCookie(req))
    return { ok: true as const }
  })

  const revokeAll = { tags, response: { 200: ConsoleSessionsRevoked, ...errors } } as const
  app.delete('/api/console/sessions', { config: { ungated: true }, schema: revokeAll }, async (req, reply) => {
    const revoked = await consoleSessions.revokeAll(req.actor)
    if (req.consoleSession) void reply.header('set-cookie', clearSessionCookie(req))
    return { ok: true as const, revoked }
  })
}
