import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { ActivityEntry, ActivityFilter, ActivityRepository, NewActivity, NewOutboxEntry } from '@slaw/core'
import type { Database } from '../schema.js'
import { json, recordset } from '../sql-helpers.js'

/** The record's columns (the table also holds `txid`, for the event feed). */
const entryColumns = ['id', 'squadId', 'actorType', 'actorId', 'action', 'entityType', 'entityId', 'agentId', 'runId', 'details', 'createdAt'] as const satisfies ReadonlyArray<keyof ActivityEntry>

export class PgActivityRepository implements ActivityRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(e: NewActivity): Promise<ActivityEntry> {
    const row = await this.db()
      .insertInto('activity')
      .values({ ...e, details: e.details === null ? null : json(e.details) })
      .returning(entryColumns)
      .executeTakeFirstOrThrow()
    return row
  }

  async record(entries: ActivityEntry[], outbox: NewOutboxEntry[]): Promise<void> {
    if (!entries.length) {
      if (outbox.length) await sql`${outboxInsert(outbox)}`.execute(this.db())
      return
    }
    if (!outbox.length) {
      await sql`${activityInsert(entries)}`.execute(this.db())
      return
    }
    await sql`with act as (${activityInsert(entries)}) ${outboxInsert(outbox)}`.execute(this.db())
  }

  async list(f: ActivityFilter): Promise<ActivityEntry[]> {
    // Entry ids are UUIDv7: id order is time order, and every filter below has an index ending in id.
    let q = this.db().selectFrom('activity').select(entryColumns).where('squadId', '=', f.squadId)
    if (f.agentId) q = q.where('agentId', '=', f.agentId)
    if (f.entityType) q = q.where('entityType', '=', f.entityType)
    if (f.entityId) q = q.where('entityId', '=', f.entityId)
    return q.orderBy('id', 'desc').limit(f.limit).execute()
  }
}

const activityColumns = [
  ['id', 'uuid'],
  ['squad_id', 'uuid'],
  ['actor_type', 'text'],
  ['actor_id', 'text'],
  ['action', 'text'],
  ['entity_type', 'text'],
  ['entity_id', 'text'],
  ['agent_id', 'uuid'],
  ['run_id', 'uuid'],
  ['details', 'jsonb'],
  ['created_at', 'timestamptz'],
] as const
const outboxColumns = [
  ['kind', 'text'],
  ['entity_type', 'text'],
  ['entity_id', 'text'],
  ['squad_id', 'uuid'],
  ['payload', 'jsonb'],
] as const

/** `insert into activity …` for entries built in the service (ids and times included), rows as one parameter. */
export function activityInsert(entries: ActivityEntry[], where?: RawBuilder<unknown>): RawBuilder<unknown> {
  const rows = entries.map((a) => ({
    id: a.id,
    squad_id: a.squadId,
    actor_type: a.actorType,
    actor_id: a.actorId,
    action: a.action,
    entity_type: a.entityType,
    entity_id: a.entityId,
    agent_id: a.agentId,
    run_id: a.runId,
    details: a.details,
    created_at: a.createdAt,
  }))
  return sql`insert into activity (${sql.raw(activityColumns.map(([c]) => c).join(', '))}) ${recordset(rows, activityColumns, where)}`
}

/** `insert into outbox …`, for writing outbox rows in the same statement as the change they report (in the order given). */
export function outboxInsert(entries: NewOutboxEntry[], where?: RawBuilder<unknown>): RawBuilder<unknown> {
  const rows = entries.map((o) => ({ kind: o.kind, entity_type: o.entityType, entity_id: o.entityId, squad_id: o.squadId, payload: o.payload }))
  return sql`insert into outbox (${sql.raw(outboxColumns.map(([c]) => c).join(', '))}) ${recordset(rows, outboxColumns, where)}`
}
