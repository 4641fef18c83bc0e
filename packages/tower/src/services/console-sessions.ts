import { createHmac, randomBytes } from 'node:crypto'
import type { TowerDb } from '../db/database.js'
import { TowerError } from '../errors.js'
import { secretsEqual } from './keys.js'

/** A fleet page session token: `slaw_ts_` and 43 base64url characters (256 random bits). */
const tokenShape = /^slaw_ts_[A-Za-z0-9_-]{43}$/

export interface ConsoleSessionsOptions {
  adminKey: string
  /** Session lifetime in hours. Default 12. */
  hours?: number | undefined
  now?: (() => Date) | undefined
}

/**
 * Fleet page sign-in (docs/tower.md): the admin key is exchanged for a random token kept in an
 * HttpOnly cookie. Stored: the token's HMAC-SHA256 under the admin key (so a session made under a
 * replaced admin key is no longer found, and the table alone lets nobody test admin key guesses)
 * and an expiry. The admin key itself is stored nowhere.
 */
export function consoleSessions(db: TowerDb, options: ConsoleSessionsOptions) {
  const hours = options.hours ?? 12
  if (!(Number.isFinite(hours) && hours > 0 && hours <= 720)) throw new TypeError('createTower: consoleSessionHours must be above 0 and at most 720')
  const ttlMs = Math.round(hours * 3_600_000)
  const now = options.now ?? (() => new Date())
  const hash = (token: string) => createHmac('sha256', options.adminKey).update(token).digest('hex')

  return {
    ttlMs,
    /** 401 `unauthorized` for a wrong key; otherwise a new session, its token returned once. */
    async signIn(adminKey: string): Promise<{ token: string; expiresAt: Date; maxAgeSec: number }> {
      if (!secretsEqual(adminKey, options.adminKey)) throw new TowerError('unauthorized', 'That admin key is wrong.')
      const token = `slaw_ts_${randomBytes(32).toString('base64url')}`
      const at = now()
      const expiresAt = new Date(at.getTime() + ttlMs)
      await db.deleteFrom('tower_console_sessions').where('expires_at', '<=', at).execute()
      await db
        .insertInto('tower_console_sessions')
        .values({ token_hash: hash(token), expires_at: expiresAt })
        .execute()
      return { token, expiresAt, maxAgeSec: Math.floor(ttlMs / 1000) }
    },
    /** The session's expiry, or undefined for an unknown, signed-out or expired token. */
    async check(token: string): Promise<Date | undefined> {
      if (!tokenShape.test(token)) return undefined
      const row = await db.selectFrom('tower_console_sessions').select('expires_at').where('token_hash', '=', hash(token)).where('expires_at', '>', now()).executeTakeFirst()
      return row?.expires_at
    },
    async signOut(token: string): Promise<void> {
      if (tokenShape.test(token)) await db.deleteFrom('tower_console_sessions').where('token_hash', '=', hash(token)).execute()
    },
  }
}
export type ConsoleSessions = ReturnType<typeof consoleSessions>
