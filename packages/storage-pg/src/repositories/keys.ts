import type { Kysely } from 'kysely'
import type { ApiKeyRecord, KeyRepository, NewApiKey } from '@slaw/core'
import type { Database } from '../schema.js'
import { guardUnique, now } from '../sql-helpers.js'

export class PgKeyRepository implements KeyRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(k: NewApiKey): Promise<ApiKeyRecord> {
    return guardUnique(this.db().insertInto('apiKeys').values(k).returningAll().executeTakeFirstOrThrow())
  }

  async findByHash(tokenHash: string): Promise<ApiKeyRecord | undefined> {
    return this.db().selectFrom('apiKeys').selectAll().where('tokenHash', '=', tokenHash).executeTakeFirst()
  }

  async listForAgent(agentId: string): Promise<ApiKeyRecord[]> {
    return this.db().selectFrom('apiKeys').selectAll().where('agentId', '=', agentId).orderBy('createdAt').execute()
  }

  async listOperatorKeys(): Promise<ApiKeyRecord[]> {
    return this.db().selectFrom('apiKeys').selectAll().where('kind', '=', 'operator').orderBy('createdAt').execute()
  }

  async countOperatorKeys(): Promise<number> {
    const row = await this.db()
      .selectFrom('apiKeys')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('kind', '=', 'operator')
      .where('revokedAt', 'is', null)
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }

  async rehash(id: string, tokenHash: string): Promise<boolean> {
    const r = await this.db().updateTable('apiKeys').set({ tokenHash }).where('id', '=', id).executeTakeFirst()
    return Number(r.numUpdatedRows) > 0
  }

  async revoke(id: string): Promise<boolean> {
    const r = await this.db().updateTable('apiKeys').set({ revokedAt: now() }).where('id', '=', id).where('revokedAt', 'is', null).executeTakeFirst()
    return Number(r.numUpdatedRows) > 0
  }
}
