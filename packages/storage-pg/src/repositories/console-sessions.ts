import type { Kysely } from 'kysely'
import type { ConsoleSessionRecord, ConsoleSessionRepository, NewConsoleSession } from '@slaw/core'
import type { Database } from '../schema.js'
import { guardUnique } from '../sql-helpers.js'

export class PgConsoleSessionRepository implements ConsoleSessionRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(s: NewConsoleSession): Promise<ConsoleSessionRecord> {
    return guardUnique(this.db().insertInto('consoleSessions').values(s).returningAll().executeTakeFirstOrThrow())
  }

  async findActive(tokenHash: string, now: Date): Promise<ConsoleSessionRecord | undefined> {
    // One indexed lookup that also checks the key: a revoked or expired Operator key ends its sessions.
    return this.db()
      .selectFrom('consoleSessions as s')
      .innerJoin('apiKeys as k', 'k.id', 's.keyId')
      .select(['s.id', 's.tokenHash', 's.keyId', 's.createdAt', 's.expiresAt'])
      .where('s.tokenHash', '=', tokenHash)
      .where('s.expiresAt', '>', now)
      .where('k.kind', '=', 'operator')
      .where('k.revokedAt', 'is', null)
      .where((eb) => eb.or([eb('k.expiresAt', 'is', null), eb('k.expiresAt', '>', now)]))
      .executeTakeFirst()
  }

  async deleteByHash(tokenHash: string): Promise<boolean> {
    const r = await this.db().deleteFrom('consoleSessions').where('tokenHash', '=', tokenHash).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }

  async deleteForKey(keyId: string): Promise<number> {
    const r = await this.db().deleteFrom('consoleSessions').where('keyId', '=', keyId).executeTakeFirst()
    return Number(r.numDeletedRows)
  }

  async deleteAll(): Promise<number> {
    const r = await this.db().deleteFrom('consoleSessions').executeTakeFirst()
    return Number(r.numDeletedRows)
  }

  async deleteExpired(now: Date): Promise<number> {
    const r = await this.db().deleteFrom('consoleSessions').where('expiresAt', '<=', now).executeTakeFirst()
    return Number(r.numDeletedRows)
  }
}
