import { sql, type RawBuilder } from 'kysely'
import type { Fact, HeartbeatRequest, ManifestRequest, ManifestResponse, ResyncType, SyncRequest, SyncResponse, HeartbeatResponse } from '@slaw/core/ingest'
import { json } from '@slaw/storage-pg'
import type { TowerDb } from '../db/database.js'
import { TowerError } from '../errors.js'
import type { Directives } from './directives.js'
import { hashKey } from './keys.js'

/** The instance behind a valid API key. */
export interface AuthedInstance {
  pk: string
  enrollmentId: string
  machineId: string
  instanceId: string
  appliedLimitVersion: number | null
  appliedSkillCatalogVersion: number | null
  deliveredLimitVersion: number
  deliveredCatalogVersion: number
}

/** Greater of two cursors: numerically when both are decimal (zero-padded or not), else bytewise. */
const cursorGreater = (a: RawBuilder<unknown>, b: RawBuilder<unknown>) => sql<boolean>`(case
  when ${a} ~ '^[0-9]+$' and ${b} ~ '^[0-9]+$' then ${a}::numeric > ${b}::numeric
  else ${a} collate "C" > ${b} collate "C" end)`

export function ingest(db: TowerDb, directives: Directives, clock: () => Date = () => new Date()) {
  return {
    /**
     * Resolves a bearer key: 401 unauthorized when unknown, 403 enrollment_revoked or
     * enrollment_rejected when its enrollment was. One indexed lookup by the key's hash.
     */
    async authenticate(apiKey: string | null): Promise<AuthedInstance> {
      if (!apiKey) throw new TowerError('unauthorized')
      const row = await db
        .selectFrom('tower_enrollments as e')
        .innerJoin('tower_instances as i', 'i.id', 'e.instance_pk')
        .select([
          'e.id as enrollment_id',
          'e.state',
          'i.id as pk',
          'i.machine_id',
          'i.instance_id',
          'i.applied_limit_version',
          'i.applied_skill_catalog_version',
          'i.delivered_limit_version',
          'i.delivered_catalog_version',
        ])
        .where('e.api_key_hash', '=', hashKey(apiKey))
        .executeTakeFirst()
      if (!row) throw new TowerError('unauthorized')
      if (row.state === 'revoked') throw new TowerError('enrollment_revoked')
      if (row.state === 'rejected') throw new TowerError('enrollment_rejected')
      if (row.state !== 'active') throw new TowerError('unauthorized')
      return {
        pk: row.pk,
        enrollmentId: row.enrollment_id,
        machineId: row.machine_id,
        instanceId: row.instance_id,
        appliedLimitVersion: row.applied_limit_version === null ? null : Number(row.applied_limit_version),
        appliedSkillCatalogVersion: row.applied_skill_catalog_version === null ? null : Number(row.applied_skill_catalog_version),
        deliveredLimitVersion: Number(row.delivered_limit_version),
        deliveredCatalogVersion: Number(row.delivered_catalog_version),
      }
    },

    /** Proof of life for calls that store nothing else (skills, live pings). */
    async touch(instancePk: string): Promise<void> {
      await db.updateTable('tower_instances').set({ last_seen_at: sql`now()` }).where('id', '=', instancePk).execute()
    },

    /**
     * POST /heartbeat: records liveness, counts and spend, and learns the heartbeat interval from the
     * gap since the previous one (a shorter gap is adopted at once, a longer one at most doubles the
     * estimate per heartbeat, so one late heartbeat does not hide an outage; bounds 10 s to 1 h).
     */
    async heartbeat(instance: AuthedInstance, body: HeartbeatRequest): Promise<HeartbeatResponse> {
      // One reading of the clock for the gap and the new time, so the interval learnt is exact.
      const now = sql`${clock().toISOString()}::timestamptz`
      const gapSec = sql`extract(epoch from ${now} - last_heartbeat_at)`
      await sql`
        update tower_instances set
          heartbeat_interval_sec = case
            when last_heartbeat_at is null or ${gapSec} < 5 then heartbeat_interval_sec
            else least(3600, greatest(10, least(round(${gapSec})::integer, heartbeat_interval_sec * 2)))
          end,
          last_heartbeat_at = ${now},
          last_seen_at = ${now},
          status = ${body.status},
          uptime_sec = ${body.uptimeSec},
          counts = ${json(body.counts)},
          spend_today_cents = ${body.spend.todayCents},
          spend_month_cents = ${body.spend.monthCents},
          last_event_cursor = ${body.lastEventCursor},
          applied_limit_version = coalesce(${body.appliedLimitVersion ?? null}::bigint, applied_limit_version),
          applied_skill_catalog_version = coalesce(${body.appliedSkillCatalogVersion ?? null}::bigint, applied_skill_catalog_version),
          updated_at = now()
        where id = ${instance.pk}
      `.execute(db)
      // What the instance reports applied decides what is (re)sent; without a report, what was last sent.
      const out = await directives.deliver(instance.pk, {
        limitFloor: body.appliedLimitVersion ?? Math.max(instance.appliedLimitVersion ?? 0, instance.deliveredLimitVersion),
        catalogFloor: body.appliedSkillCatalogVersion ?? Math.max(instance.appliedSkillCatalogVersion ?? 0, instance.deliveredCatalogVersion),
      })
      return { acknowledged: true, directives: out }
    },

    /**
     * POST /sync: one statement stores the whole batch. Upserts go in by (instance, type, localId),
     * the newest updatedAt winning (duplicates inside the batch are collapsed first). Facts go in by
     * (instance, localId): a resent fact with the same values is deduplicated, one of the same type
     * with changed values is a correction and replaces the stored one (what is summed from facts
     * follows), one of another type is ignored. The answer echoes this batch's cursor; the stored
     * high-water mark only grows (numerically when both cursors are decimal).
     */
    async sync(instance: AuthedInstance, body: SyncRequest): Promise<SyncResponse> {
      const { rows } = await sql<{ upserted: number; inserted: number; acknowledged_cursor: string }>`
        with upsert_rows as (
          select distinct on (type, local_id) type, local_id, squad_local_id, updated_at, data
          from (
            select e->>'type' as type, e->>'localId' as local_id, e->>'squadLocalId' as squad_local_id,
                   (e->>'updatedAt')::timestamptz as updated_at, e as data
            from jsonb_array_elements(${json(body.upserts)}) as e
          ) as u
          order by type, local_id, updated_at desc
        ),
        upserted as (
          insert into tower_entities (instance_pk, type, local_id, squad_local_id, updated_at, data)
          select ${instance.pk}::uuid, type, local_id, squad_local_id, updated_at, data from upsert_rows
          on conflict (instance_pk, type, local_id) do update set
            squad_local_id = excluded.squad_local_id, updated_at = excluded.updated_at, data = excluded.data, received_at = now()
          where tower_entities.updated_at <= excluded.updated_at
          returning 1
        ),
        inserted as (
          insert into tower_facts (instance_pk, local_id, kind, squad_local_id, occurred_at, data)
          select ${instance.pk}::uuid, e->>'localId', e->>'type', e->>'squadLocalId', (e->>'occurredAt')::timestamptz, e
          from (select distinct on (e->>'localId') e from jsonb_array_elements(${json(body.facts)}) as e) as f
          -- A fixed order: two overlapping batches in flight (a retry after a timeout) take row locks
          -- in the same order and cannot deadlock. Upserts are ordered by DISTINCT ON above.
          order by e->>'localId'
          on conflict (instance_pk, local_id) do update set
            squad_local_id = excluded.squad_local_id, occurred_at = excluded.occurred_at, data = excluded.data, received_at = now()
          where tower_facts.kind = excluded.kind and tower_facts.data is distinct from excluded.data
          returning 1
        ),
        cursor as (
          update tower_instances set
            acknowledged_cursor = case
              when acknowledged_cursor is null or ${cursorGreater(sql`${body.batchCursor}::text`, sql`acknowledged_cursor`)} then ${body.batchCursor}::text
              else acknowledged_cursor end,
            last_sync_at = now(),
            last_seen_at = now()
          where id = ${instance.pk}::uuid
          returning acknowledged_cursor
        )
        select (select count(*) from upserted)::integer as upserted,
               (select count(*) from inserted)::integer as inserted,
               (select acknowledged_cursor from cursor) as acknowledged_cursor
      `.execute(db)
      const result = rows[0]!
      const inserted = Number(result.inserted)
      const out = await directives.deliver(instance.pk, {
        limitFloor: Math.max(instance.appliedLimitVersion ?? 0, instance.deliveredLimitVersion),
        catalogFloor: Math.max(instance.appliedSkillCatalogVersion ?? 0, instance.deliveredCatalogVersion),
      })
      return {
        // The cursor of the batch just stored: a sender never learns a cursor it did not send.
        acknowledgedCursor: body.batchCursor,
        accepted: { upserts: body.upserts.length, facts: inserted, deduplicated: body.facts.length - inserted },
        directives: out,
      }
    },

    /** Facts from the live channel: the same deduplicated insert as sync. Returns how many were new. */
    async storeFacts(instancePk: string, facts: Fact[]): Promise<number> {
      if (facts.length === 0) return 0
      const { rows } = await sql<{ inserted: number }>`
        with inserted as (
          insert into tower_facts (instance_pk, local_id, kind, squad_local_id, occurred_at, data)
          select ${instancePk}::uuid, e->>'localId', e->>'type', e->>'squadLocalId', (e->>'occurredAt')::timestamptz, e
          from (select distinct on (e->>'localId') e from jsonb_array_elements(${json(facts)}) as e) as f
          order by e->>'localId'
          on conflict (instance_pk, local_id) do update set
            squad_local_id = excluded.squad_local_id, occurred_at = excluded.occurred_at, data = excluded.data, received_at = now()
          where tower_facts.kind = excluded.kind and tower_facts.data is distinct from excluded.data
          returning 1
        ), seen as (
          update tower_instances set last_seen_at = now() where id = ${instancePk}::uuid returning 1
        )
        select (select count(*) from inserted)::integer as inserted, (select count(*) from seen) as seen
      `.execute(db)
      return Number(rows[0]?.inserted ?? 0)
    },

    /**
     * POST /manifest: compares the instance's counts with what the tower stored. A type is resynced
     * when the tower holds fewer than the instance (more can be legitimate: entities deleted locally
     * stay on the tower, and resyncing would not change that).
     */
    async manifest(instance: AuthedInstance, body: ManifestRequest): Promise<ManifestResponse> {
      const { rows } = await sql<{ type: string; n: number }>`
        select type, count(*)::integer as n from tower_entities
          where instance_pk = ${instance.pk}::uuid and type in ('squad', 'agent', 'project', 'issue') group by type
        union all
        select 'cost_event', count(*)::integer from tower_facts where instance_pk = ${instance.pk}::uuid and kind = 'cost_event'
      `.execute(db)
      const stored = new Map(rows.map((r) => [r.type, Number(r.n)]))
      const theirs: Record<ResyncType, number> = {
        squad: body.counts.squads,
        agent: body.counts.agents,
        project: body.counts.projects,
        issue: body.counts.issues,
        cost_event: body.counts.costEvents,
      }
      const resyncTypes = (Object.keys(theirs) as ResyncType[]).filter((type) => (stored.get(type) ?? 0) < theirs[type])
      await db
        .updateTable('tower_instances')
        .set({ last_manifest_at: sql`now()`, last_seen_at: sql`now()`, manifest_counts: json(body.counts) })
        .where('id', '=', instance.pk)
        .execute()
      return { inSync: resyncTypes.length === 0, resyncTypes }
    },
  }
}
