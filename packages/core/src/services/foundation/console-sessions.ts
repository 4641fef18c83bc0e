import { SlawError } from '../../errors.js'
import { requireOperator, type Actor } from './actor.js'
import type { AuthService } from './auth.js'
import type { ServiceContext } from './context.js'
import { hashToken, newToken, uuidv7 } from './ids.js'

/** How long a console session lasts unless configured (`consoleSessionHours`, SVC_CONSOLE_SESSION_HOURS). */
const defaultConsoleSessionHours = 12

/** A cookie token: `slaw_cs_` and 43 base64url characters (256 random bits). */
const sessionToken = /^slaw_cs_[A-Za-z0-9_-]{43}$/

export interface ConsoleSessionOptions {
  /** Lifetime of a session in hours (fractions allowed, at most 30 days). Default 12. */
  hours?: number
}

/**
 * Console sign-in (docs/console.md): an Operator key is exchanged for a random session token the
 * browser keeps in an HttpOnly cookie. Only the token's SHA-256 is stored, with the key that
 * signed in and an expiry; the key itself is kept nowhere. Revoking the key ends its sessions.
 */
export class ConsoleSessionService {
  readonly ttlMs: number

  constructor(
    private readonly ctx: ServiceContext,
    private readonly auth: AuthService,
    options: ConsoleSessionOptions = {},
  ) {
    const hours = options.hours ?? defaultConsoleSessionHours
    if (!(typeof hours === 'number' && Number.isFinite(hours) && hours > 0 && hours <= 720)) {
      throw new TypeError('consoleSessionHours must be a number of hours above 0 and at most 720')
    }
    this.ttlMs = Math.round(hours * 3_600_000)
  }

  /**
   * Checks `operatorKey` as a bearer Operator key would be checked (a wrong key counts towards the
   * per-address failure limit of `client`) and opens a session. The token is returned once.
   */
  async signIn(operatorKey: string, client?: string): Promise<{ token: string; expiresAt: Date; maxAgeSec: number }> {
    let actor: Actor
    try {
      actor = await this.auth.authenticate(`Bearer ${operatorKey}`, undefined, client)
    } catch (err) {
      if (err instanceof SlawError && err.code === 'unauthorized') {
        throw new SlawError('unauthorized', 'That Operator key is unknown, revoked or expired.')
      }
      throw err
    }
    if (actor.type !== 'operator' || !actor.keyId) throw new SlawError('forbidden', 'Only an Operator key signs in to the console; this is an agent key.')
    const { storage } = this.ctx
    const now = this.ctx.now()
    let expiresAt = new Date(now.getTime() + this.ttlMs)
    // A key that expires sooner ends the session sooner; say so in the answer.
    const key = (await storage.keys.listOperatorKeys()).find((k) => k.id === actor.keyId)
    if (key?.expiresAt && key.expiresAt < expiresAt) expiresAt = key.expiresAt
    const token = newToken('slaw_cs')
    await storage.consoleSessions.deleteExpired(now)
    await storage.consoleSessions.insert({ id: uuidv7(), tokenHash: hashToken(token), keyId: actor.keyId, expiresAt })
    return { token, expiresAt, maxAgeSec: Math.floor((expiresAt.getTime() - now.getTime()) / 1000) }
  }

  /**
   * A session cookie → the Operator it signed in. Unknown, expired, signed-out sessions and those of
   * a revoked or expired key answer 401. Tokens are 256-bit random, so they are not counted towards
   * the failure limit (a browser holding a stale cookie must still be able to sign in again).
   */
  async authenticate(token: string): Promise<{ actor: Actor; expiresAt: Date }> {
    const rejected = new SlawError('unauthorized', 'The console session is unknown, signed out or expired; sign in again.')
    if (!sessionToken.test(token)) throw rejected
    const session = await this.ctx.storage.consoleSessions.findActive(hashToken(token), this.ctx.now())
    if (!session) throw rejected
    return { actor: { type: 'operator', keyId: session.keyId }, expiresAt: session.expiresAt }
  }

  /** Signs out: the session's row is deleted. Nothing happens for an unknown token. */
  async signOut(token: string): Promise<void> {
    if (sessionToken.test(token)) await this.ctx.storage.consoleSessions.deleteByHash(hashToken(token))
  }

  /** Ends every console session (an Operator's `DELETE /api/console/sessions`); how many. */
  async revokeAll(actor: Actor): Promise<number> {
    requireOperator(actor)
    return this.ctx.storage.consoleSessions.deleteAll()
  }
}
