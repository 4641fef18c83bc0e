import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { ActivityEntry, ActivityFilter, ActivityRepository, NewActivity, NewOutboxEntry } from '@slaw/core'
import type { Database, Row } from '../schema.js'
import { json } from '../sql-helpers.js'

const toEntry = (r: Row<'activity'>): ActivityEntry => ({ ...r, actorType: r.actorType as ActivityEntry['actorType'] })

export class PgActivityRepository implements ActivityRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(e: NewActivity): Promise<ActivityEntry> {
    const row = await this.db()
      .insertInto('activity')
      .values({ ...e, details: e.details === null ? null : json(e.details) })
      .returningAll()
      .executeTakeFirstOrThrow()
    return toEntry(row)
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
    let q = this.db().selectFrom('activity').selectAll().where('squadId', '=', f.squadId)
    if (f.agentId) q = q.where('agentId', '=', f.agentId)
    if (f.entityType) q = q.where('entityType', '=', f.entityType)
    if (f.entityId) q = q.where('entityId', '=', f.entityId)
    return (await q.orderBy('id', 'desc').limit(f.limit).execute()).map(toEntry)
  }
}

/** `insert into activity …` for entries built in the service (ids and times included). */
export function activityInsert(entries: ActivityEntry[]): RawBuilder<unknown> {
  return sql`insert into activity (id, squad_id, actor_type, actor_id, action, entity_type, entity_id, agent_id, run_id, details, created_at)
    values ${sql.join(entries.map((a) => sql`(${a.id}, ${a.squadId}, ${a.actorType}, ${a.actorId}, ${a.action}, ${a.entityType}, ${a.entityId}, ${a.agentId}, ${a.runId}, ${a.details === null ? null : json(a.details)}, ${a.createdAt})`))}`
}

/** `insert into outbox …`, for writing outbox rows in the same statement as the change they report. */
export function outboxInsert(entries: NewOutboxEntry[]): RawBuilder<unknown> {
  return sql`insert into outbox (kind, entity_type, entity_id, squad_id, payload)
    values ${sql.join(entries.map((o) => sql`(${o.kind}, ${o.entityType}, ${o.entityId}, ${o.squadId}, ${json(o.payload)})`))}`
}
