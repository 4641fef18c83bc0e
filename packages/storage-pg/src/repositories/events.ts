import { sql, type Kysely } from 'kysely'
import { isEventCursor, type EventFeed, type FeedEvent } from '@slaw/core'
import type { Database } from '../schema.js'
import { visibilityHorizon } from '../sql-helpers.js'

/**
 * The live event feed over the activity log. A row is read only once it is final (its writing
 * transaction and every older one have ended: txid below the visibility horizon, as the outbox
 * publishes), in (txid, id) order, so a cursor that moves past what it read never skips a row
 * that commits late. Cursors are `<txid>-0-<activity id>` (source 0: activity).
 */
export class PgEventFeed implements EventFeed {
  constructor(private readonly db: () => Kysely<Database>) {}

  async readAfter(after: string, limit: number, squadId?: string): Promise<{ events: FeedEvent[]; pending: boolean }> {
    const { txid, source, key } = parse(after)
    // Past a cursor: a later transaction, or the same one and a later activity id.
    const past =
      source > 0 ? sql`a.txid > ${txid}::bigint` : key ? sql`(a.txid, a.id) > (${txid}::bigint, ${key}::uuid)` : sql`a.txid >= ${txid}::bigint`
    const { rows } = await sql<FeedEvent & { pending: boolean }>`
      with h as (select ${visibilityHorizon()} as horizon)
      select a.txid::text || '-0-' || a.id::text as cursor, a.squad_id as "squadId", a.action, a.entity_type as "entityType",
             a.entity_id as "entityId", a.actor_type as "actorType", a.actor_id as "actorId", a.agent_id as "agentId",
             a.run_id as "runId", a.details, a.created_at as "createdAt", false as pending
        from activity a, h
       where a.txid is not null and a.txid < h.horizon and ${past}${squadId ? sql` and a.squad_id = ${squadId}::uuid` : sql``}
       order by a.txid, a.id
       limit ${limit}`.execute(this.db())
    if (rows.length >= limit) return { events: rows.map(strip), pending: true }
    // Committed but not final yet (an older transaction is still open): the caller reads again soon.
    const { rows: [waiting] } = await sql<{ pending: boolean }>`
      select exists (select 1 from activity a where a.txid is not null and a.txid >= ${visibilityHorizon()}${squadId ? sql` and a.squad_id = ${squadId}::uuid` : sql``}) as pending`.execute(this.db())
    return { events: rows.map(strip), pending: waiting?.pending === true }
  }

  async head(): Promise<string> {
    const { rows: [row] } = await sql<{ cursor: string }>`
      select a.txid::text || '-0-' || a.id::text as cursor from activity a
       where a.txid is not null and a.txid < ${visibilityHorizon()}
       order by a.txid desc, a.id desc limit 1`.execute(this.db())
    return row?.cursor ?? '0'
  }

  async locate(cursor: string): Promise<Date | undefined> {
    if (cursor === '0' || !isEventCursor(cursor)) return undefined
    const { txid, source, key } = parse(cursor)
    if (source !== 0 || !/^[0-9a-f-]{36}$/.test(key)) return undefined
    const { rows: [row] } = await sql<{ createdAt: Date }>`
      select created_at as "createdAt" from activity where id = ${key}::uuid and txid = ${txid}::bigint`.execute(this.db())
    return row?.createdAt
  }
}

function strip(row: FeedEvent & { pending?: boolean }): FeedEvent {
  const { pending: _pending, ...event } = row
  return event
}

function parse(cursor: string): { txid: string; source: number; key: string } {
  if (cursor === '0' || !isEventCursor(cursor)) return { txid: '0', source: 0, key: '' }
  const [txid = '0', source = '0', ...key] = cursor.split('-')
  return { txid, source: Number(source), key: key.join('-') }
}
