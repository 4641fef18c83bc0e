import { sql } from 'kysely'
import type { Directive, LimitSpec } from '@slaw/core/ingest'
import { json } from '@slaw/storage-pg'
import type { TowerDb } from '../db/database.js'
import { toSpec } from './limits.js'
import { decodeCursor, pageSize, toPage, type Page, type PageQuery } from './pagination.js'

/** Directives an administrator queues by hand; set_limits and skills_updated follow from limits and the catalog. */
export type QueueableDirective = Extract<Directive, { kind: 'set_sync_interval' | 'request_reconciliation' | 'request_live_stream' | 'stop_live_stream' }>

export interface QueuedDirective {
  id: number
  directive: QueueableDirective
  createdAt: string
  deliveredAt: string | null
}

/** What the tower knows of the versions an instance holds. */
export interface AppliedVersions {
  /** The floor below which a set_limits is not sent: what the instance applied (or was last sent). */
  limitFloor: number
  /** The same for skills_updated and the catalog version. */
  catalogFloor: number
}

interface DeliveryRow {
  source: 'queued' | 'limit' | 'catalog'
  id: number | null
  payload: unknown
  version: number | null
}

export function directives(db: TowerDb) {
  return {
    async queue(instancePk: string, directive: QueueableDirective): Promise<QueuedDirective> {
      const row = await db
        .insertInto('tower_directives')
        .values({ instance_pk: instancePk, directive: json(directive) })
        .returning(['id', 'created_at'])
        .executeTakeFirstOrThrow()
      return { id: Number(row.id), directive, createdAt: row.created_at.toISOString(), deliveredAt: null }
    },

    /** Queues one directive for every instance with an active enrollment, in one statement. */
    async queueForAll(directive: QueueableDirective): Promise<number> {
      const result = await sql`
        insert into tower_directives (instance_pk, directive)
        select distinct instance_pk, ${json(directive)} from tower_enrollments where state = 'active'
      `.execute(db)
      return Number(result.numAffectedRows ?? 0n)
    },

    async list(instancePk: string, query: PageQuery): Promise<Page<QueuedDirective>> {
      const size = pageSize(query)
      const after = decodeCursor(query.cursor, ['number'])
      let q = db.selectFrom('tower_directives').select(['id', 'directive', 'created_at', 'delivered_at']).where('instance_pk', '=', instancePk)
      if (after) q = q.where('id', '<', after[0])
      const rows = await q
        .orderBy('id', 'desc')
        .limit(size + 1)
        .execute()
      return toPage(
        rows,
        size,
        (r) => ({
          id: Number(r.id),
          directive: r.directive as unknown as QueueableDirective,
          createdAt: r.created_at.toISOString(),
          deliveredAt: r.delivered_at ? r.delivered_at.toISOString() : null,
        }),
        (r) => [Number(r.id)],
      )
    },

    /**
     * The directives for a heartbeat or sync response, in order: the queued ones (oldest first, each
     * marked delivered in the same statement, so two concurrent responses never both carry one), then
     * set_limits when the effective limit is newer than `limitFloor`, then skills_updated when the
     * catalog advanced beyond `catalogFloor`. One round trip; a second only when set_limits or
     * skills_updated goes out (to remember it was sent).
     */
    async deliver(instancePk: string, applied: AppliedVersions): Promise<Directive[]> {
      const { rows } = await sql<DeliveryRow>`
        with queued as (
          update tower_directives set delivered_at = now()
          where instance_pk = ${instancePk} and delivered_at is null
          returning id, directive
        )
        select 'queued' as source, id, directive as payload, null::bigint as version from queued
        union all
        (select 'limit', null, spec, version from tower_limits
          where instance_pk = ${instancePk} or instance_pk is null order by version desc limit 1)
        union all
        select 'catalog', null, null, version from tower_catalog where id = 1
      `.execute(db)
      const out: Directive[] = rows
        .filter((r) => r.source === 'queued')
        .sort((a, b) => Number(a.id) - Number(b.id))
        .map((r) => r.payload as Directive)
      const limitRow = rows.find((r) => r.source === 'limit')
      const catalogVersion = Number(rows.find((r) => r.source === 'catalog')?.version ?? 0)
      let limit: LimitSpec | null = null
      if (limitRow && Number(limitRow.version) > applied.limitFloor) {
        limit = toSpec({ version: limitRow.version!, spec: limitRow.payload })
        out.push({ kind: 'set_limits', limit })
      }
      const skillsUpdated = catalogVersion > 0 && catalogVersion > applied.catalogFloor
      if (skillsUpdated) out.push({ kind: 'skills_updated', catalogVersion })
      if (limit || skillsUpdated) {
        await db
          .updateTable('tower_instances')
          .set((eb) => ({
            delivered_limit_version: limit ? sql`greatest(${eb.ref('delivered_limit_version')}, ${limit.version})` : eb.ref('delivered_limit_version'),
            delivered_catalog_version: skillsUpdated ? sql`greatest(${eb.ref('delivered_catalog_version')}, ${catalogVersion})` : eb.ref('delivered_catalog_version'),
          }))
          .where('id', '=', instancePk)
          .execute()
      }
      return out
    },
  }
}
export type Directives = ReturnType<typeof directives>
