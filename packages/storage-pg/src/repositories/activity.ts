import type { Kysely } from 'kysely'
import type { ActivityEntry, ActivityFilter, ActivityRepository, NewActivity } from '@slaw/core'
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

  async list(f: ActivityFilter): Promise<ActivityEntry[]> {
    // Entry ids are UUIDv7: id order is time order, and every filter below has an index ending in id.
    let q = this.db().selectFrom('activity').selectAll().where('squadId', '=', f.squadId)
    if (f.agentId) q = q.where('agentId', '=', f.agentId)
    if (f.entityType) q = q.where('entityType', '=', f.entityType)
    if (f.entityId) q = q.where('entityId', '=', f.entityId)
    return (await q.orderBy('id', 'desc').limit(f.limit).execute()).map(toEntry)
  }
}
