import { sql, type Kysely } from 'kysely'
import type { NewOutboxEntry, OutboxEntry, OutboxRepository } from '@slaw/core'
import { outboxInsert } from './activity.js'
import type { Database } from '../schema.js'
import { visibilityHorizon } from '../sql-helpers.js'

/**
 * The transactional outbox. Rows get an internal id at insert, but a reader must never see row
 * 7 before a slower transaction commits row 6. So rows are published in order of their writing
 * transaction, and only once that transaction and every older one has finished (txid below the
 * snapshot's xmin): the published sequence (`seq`) only ever grows at its end.
 */
export class PgOutboxRepository implements OutboxRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async append(entries: NewOutboxEntry[]): Promise<void> {
    if (!entries.length) return
    await sql`${outboxInsert(entries)}`.execute(this.db())
  }

  /** Publishes final rows. Serialised by an advisory lock so two publishers never interleave. */
  private async publish(): Promise<void> {
    const run = async (trx: Kysely<Database>) => {
      await sql`select pg_advisory_xact_lock(7310001)`.execute(trx)
      await sql`
          update outbox o set pub_seq = p.seq
            from (
              select id, nextval('outbox_pub_seq') as seq
                from (select id from outbox
                       where pub_seq is null
                         and txid < ${visibilityHorizon()}
                       order by txid, id
                       limit 20000) ordered
            ) p
           where o.id = p.id`.execute(trx)
    }
    const db = this.db()
    // Inside a caller's transaction the lock holds until that one commits.
    if (db.isTransaction) await run(db)
    else await db.transaction().execute(run)
  }

  async readAfter(afterSeq: string, limit: number): Promise<OutboxEntry[]> {
    await this.publish()
    const { rows } = await sql<{ seq: string; kind: OutboxEntry['kind']; entityType: string; entityId: string; squadId: string | null; payload: Record<string, unknown>; createdAt: Date }>`
      select pub_seq::text as seq, kind, entity_type as "entityType", entity_id as "entityId", squad_id as "squadId", payload, created_at as "createdAt"
        from outbox where pub_seq > ${afterSeq}::bigint order by pub_seq limit ${limit}`.execute(this.db())
    return rows
  }

  async countAfter(afterSeq: string): Promise<number> {
    const { rows } = await sql<{ n: number }>`
      select count(*) as n from outbox where pub_seq is null or pub_seq > ${afterSeq}::bigint`.execute(this.db())
    return Number(rows[0]?.n ?? 0)
  }
}
