import { sql, type Kysely } from 'kysely'
import { compareEventCursors, isEventCursor, type EventFeed, type FeedEvent } from '@slaw/core'
import type { Database } from '../schema.js'
import { visibilityHorizon } from '../sql-helpers.js'

/**
 * The live event feed over the activity log. A row is read only once it is final (its writing
 * transaction and every older one have ended: txid below the visibility horizon, as the outbox
 * publishes), in (txid, id) order, so a cursor that moves past what it read never skips a row
 * that commits late. Cursors are `<txid>-0-<activity id>` for activity and `<txid>-1-<output id,
 * 19 digits>` for run output (a `run.output` event).
 */
export class PgEventFeed implements EventFeed {
  constructor(private readonly db: () => Kysely<Database>) {}

  async readAfter(after: string, limit: number, squadId?: string): Promise<{ events: FeedEvent[]; pending: boolean }> {
    const { txid, source, key } = parse(after)
    // Past the cursor (txid, source, key): activity is source 0, run output source 1.
    const pastActivity = source > 0 ? sql`a.txid > ${txid}::bigint` : key ? sql`(a.txid, a.id) > (${txid}::bigint, ${key}::uuid)` : sql`a.txid >= ${txid}::bigint`
    const pastOutput = source === 0 ? sql`o.txid >= ${txid}::bigint` : sql`(o.txid, o.id) > (${txid}::bigint, ${key || '0'}::bigint)`
    const ofSquad = (alias: string) => (squadId ? sql` and ${sql.ref(`${alias}.squad_id`)} = ${squadId}::uuid` : sql``)
    const { rows } = await sql<FeedEvent>`
      with h as (select ${visibilityHorizon()} as horizon)
      select cursor, "squadId", action, "entityType", "entityId", "actorType", "actorId", "agentId", "runId", details, "createdAt" from (
        (select a.txid, 0 as source, a.id::text as key, a.txid::text || '-0-' || a.id::text as cursor, a.squad_id as "squadId", a.action,
                a.entity_type as "entityType", a.entity_id as "entityId", a.actor_type as "actorType", a.actor_id as "actorId",
                a.agent_id as "agentId", a.run_id as "runId", a.details, a.created_at as "createdAt"
           from activity a, h
          where a.txid is not null and a.txid < h.horizon and ${pastActivity}${ofSquad('a')}
          order by a.txid, a.id limit ${limit})
        union all
        (select o.txid, 1, lpad(o.id::text, 19, '0'), o.txid::text || '-1-' || lpad(o.id::text, 19, '0'), o.squad_id, 'run.output',
                'heartbeat_run', o.run_id::text, 'system', 'run-engine', o.agent_id, o.run_id,
                jsonb_build_object('stream', o.stream, 'text', o.text, 'offset', o."offset", 'issueId', o.issue_id), o.created_at
           from heartbeat_run_output o, h
          where o.txid < h.horizon and ${pastOutput}${ofSquad('o')}
          order by o.txid, o.id limit ${limit})
      ) e order by txid, source, key limit ${limit}`.execute(this.db())
    if (rows.length >= limit) return { events: rows, pending: true }
    // Committed but not final yet (an older transaction is still open): the caller reads again soon.
    const {
      rows: [waiting],
    } = await sql<{ pending: boolean }>`
      with h as (select ${visibilityHorizon()} as horizon)
      select exists (select 1 from activity a, h where a.txid is not null and a.txid >= h.horizon${ofSquad('a')})
          or exists (select 1 from heartbeat_run_output o, h where o.txid >= h.horizon${ofSquad('o')}) as pending`.execute(this.db())
    return { events: rows, pending: waiting?.pending === true }
  }

  async head(): Promise<string> {
    const {
      rows: [row],
    } = await sql<{ activity: string | null; output: string | null }>`
      with h as (select ${visibilityHorizon()} as horizon)
      select (select a.txid::text || '-0-' || a.id::text from activity a, h
               where a.txid is not null and a.txid < h.horizon order by a.txid desc, a.id desc limit 1) as activity,
             (select o.txid::text || '-1-' || lpad(o.id::text, 19, '0') from heartbeat_run_output o, h
               where o.txid < h.horizon order by o.txid desc, o.id desc limit 1) as output`.execute(this.db())
    const heads = [row?.activity, row?.output].filter((c): c is string => typeof c === 'string')
    return heads.sort(compareEventCursors).pop() ?? '0'
  }

  async locate(cursor: string): Promise<Date | undefined> {
    if (cursor === '0' || !isEventCursor(cursor)) return undefined
    const { txid, source, key } = parse(cursor)
    if (source === 0 && /^[0-9a-f-]{36}$/.test(key)) {
      const {
        rows: [row],
      } = await sql<{ createdAt: Date }>`
        select created_at as "createdAt" from activity where id = ${key}::uuid and txid = ${txid}::bigint`.execute(this.db())
      return row?.createdAt
    }
    if (source === 1 && /^\d{1,19}$/.test(key)) {
      // A run keeps only the tail of its output, so the chunk itself may be gone while the place in
      // the feed is still good: then the nearest event before it (or else after it) dates that place.
      const {
        rows: [row],
      } = await sql<{ createdAt: Date | null }>`
        with h as (select ${visibilityHorizon()} as horizon)
        select case when ${txid}::bigint >= (select horizon from h) then null else coalesce(
                 (select created_at from heartbeat_run_output where id = ${key}::bigint and txid = ${txid}::bigint),
                 greatest(
                   (select created_at from heartbeat_run_output where txid <= ${txid}::bigint order by txid desc, id desc limit 1),
                   (select created_at from activity where txid is not null and txid <= ${txid}::bigint order by txid desc, id desc limit 1)),
                 least(
                   (select created_at from heartbeat_run_output where txid > ${txid}::bigint order by txid, id limit 1),
                   (select created_at from activity where txid is not null and txid > ${txid}::bigint order by txid, id limit 1)))
               end as "createdAt"`.execute(this.db())
      return row?.createdAt ?? undefined
    }
    return undefined
  }
}

function parse(cursor: string): { txid: string; source: number; key: string } {
  if (cursor === '0' || !isEventCursor(cursor)) return { txid: '0', source: 0, key: '' }
  const [txid = '0', source = '0', ...key] = cursor.split('-')
  return { txid, source: Number(source), key: key.join('-') }
}
