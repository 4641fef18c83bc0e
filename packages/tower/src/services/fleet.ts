import { sql } from 'kysely'
import { MISSED_HEARTBEATS_OFFLINE, type EnrollmentState, type FactType, type UpsertType } from '@slaw/core/ingest'
import type { TowerDb } from '../db/database.js'
import { notFound } from '../errors.js'
import { isUuid } from './keys.js'
import { decodeCursor, pageSize, toPage, type Page, type PageQuery } from './pagination.js'

export interface InstanceView {
  id: string
  machineId: string
  instanceId: string
  hostname: string
  os: string
  slawVersion: string
  capabilities: { reportIssueTitles: boolean; liveStream: boolean }
  /** `active` while any enrollment is active, else the state of the latest one. */
  state: EnrollmentState | null
  enrollmentId: string | null
  /** A key-recovery (or first) enrollment waiting for a decision. */
  pendingEnrollmentId: string | null
  /** Seen (any authenticated call) within 3 heartbeat intervals. */
  online: boolean
  status: 'ok' | 'degraded' | null
  lastSeenAt: string | null
  lastHeartbeatAt: string | null
  heartbeatIntervalSec: number
  uptimeSec: number | null
  counts: { squads: number; agents: number; activeRuns: number; openIssues: number } | null
  spend: { todayCents: number; monthCents: number } | null
  lastEventCursor: string | null
  acknowledgedCursor: string | null
  appliedLimitVersion: number | null
  appliedSkillCatalogVersion: number | null
  lastSyncAt: string | null
  lastManifestAt: string | null
  createdAt: string
}

export interface SyncedRecord {
  receivedAt: string
  data: Record<string, unknown>
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null)

/** Read side of the admin API: the fleet, and what each instance synced. */
export function fleet(db: TowerDb) {
  function instanceQuery() {
    return db
      .selectFrom('tower_instances as i')
      .leftJoinLateral(
        (eb) => eb.selectFrom('tower_enrollments').select(['id', 'state']).whereRef('instance_pk', '=', 'i.id').where('state', '=', 'active').limit(1).as('a'),
        (join) => join.onTrue(),
      )
      .leftJoinLateral(
        (eb) => eb.selectFrom('tower_enrollments').select(['id', 'state']).whereRef('instance_pk', '=', 'i.id').orderBy('created_at', 'desc').orderBy('id', 'desc').limit(1).as('l'),
        (join) => join.onTrue(),
      )
      .selectAll('i')
      .select(['a.id as active_id', 'l.id as latest_id', 'l.state as latest_state'])
      .select(sql<boolean>`coalesce(i.last_seen_at > now() - make_interval(secs => ${MISSED_HEARTBEATS_OFFLINE} * i.heartbeat_interval_sec), false)`.as('online'))
  }
  type Row = Awaited<ReturnType<ReturnType<typeof instanceQuery>['executeTakeFirstOrThrow']>>

  function toView(r: Row): InstanceView {
    return {
      id: r.id,
      machineId: r.machine_id,
      instanceId: r.instance_id,
      hostname: r.hostname,
      os: r.os,
      slawVersion: r.slaw_version,
      capabilities: { reportIssueTitles: r.report_issue_titles, liveStream: r.live_stream },
      state: r.active_id ? 'active' : (r.latest_state ?? null),
      enrollmentId: r.active_id ?? r.latest_id ?? null,
      pendingEnrollmentId: r.latest_state === 'pending' ? r.latest_id : null,
      online: Boolean(r.online),
      status: (r.status as 'ok' | 'degraded' | null) ?? null,
      lastSeenAt: iso(r.last_seen_at),
      lastHeartbeatAt: iso(r.last_heartbeat_at),
      heartbeatIntervalSec: Number(r.heartbeat_interval_sec),
      uptimeSec: r.uptime_sec === null ? null : Number(r.uptime_sec),
      counts: (r.counts as InstanceView['counts']) ?? null,
      spend: r.spend_month_cents === null ? null : { todayCents: Number(r.spend_today_cents ?? 0), monthCents: Number(r.spend_month_cents) },
      lastEventCursor: r.last_event_cursor,
      acknowledgedCursor: r.acknowledged_cursor,
      appliedLimitVersion: r.applied_limit_version === null ? null : Number(r.applied_limit_version),
      appliedSkillCatalogVersion: r.applied_skill_catalog_version === null ? null : Number(r.applied_skill_catalog_version),
      lastSyncAt: iso(r.last_sync_at),
      lastManifestAt: iso(r.last_manifest_at),
      createdAt: r.created_at.toISOString(),
    }
  }

  return {
    /** Newest first; filter by state and by online. */
    async list(query: PageQuery & { state?: EnrollmentState | undefined; online?: boolean | undefined }): Promise<Page<InstanceView>> {
      const size = pageSize(query)
      const after = decodeCursor(query.cursor, ['string', 'string'])
      let q = instanceQuery()
      if (query.state) q = q.where(sql<boolean>`coalesce(a.state, l.state) = ${query.state}`)
      if (query.online !== undefined) {
        const online = sql<boolean>`coalesce(i.last_seen_at > now() - make_interval(secs => ${MISSED_HEARTBEATS_OFFLINE} * i.heartbeat_interval_sec), false)`
        q = q.where(query.online ? online : sql<boolean>`not ${online}`)
      }
      if (after) q = q.where(sql<boolean>`(i.created_at, i.id) < (${after[0]}::timestamptz, ${after[1]}::uuid)`)
      const rows = await q
        .orderBy('i.created_at', 'desc')
        .orderBy('i.id', 'desc')
        .limit(size + 1)
        .execute()
      return toPage(rows, size, toView, (r) => [r.created_at.toISOString(), r.id])
    },

    /** 404 not_found for an unknown or malformed id. */
    async get(id: string): Promise<InstanceView> {
      const row = isUuid(id) ? await instanceQuery().where('i.id', '=', id).executeTakeFirst() : undefined
      if (!row) throw notFound('Instance')
      return toView(row)
    },

    /** Checks an instance id from a path: its primary key, or 404. */
    async require(id: string): Promise<string> {
      const row = isUuid(id) ? await db.selectFrom('tower_instances').select('id').where('id', '=', id).executeTakeFirst() : undefined
      if (!row) throw notFound('Instance')
      return row.id
    },

    /** Synced entities of one type, by localId. */
    async entities(instancePk: string, type: UpsertType, query: PageQuery): Promise<Page<SyncedRecord>> {
      const size = pageSize(query)
      const after = decodeCursor(query.cursor, ['string'])
      let q = db.selectFrom('tower_entities').select(['local_id', 'data', 'received_at']).where('instance_pk', '=', instancePk).where('type', '=', type)
      if (after) q = q.where('local_id', '>', after[0])
      const rows = await q
        .orderBy('local_id')
        .limit(size + 1)
        .execute()
      return toPage(
        rows,
        size,
        (r) => ({ receivedAt: r.received_at.toISOString(), data: r.data as unknown as Record<string, unknown> }),
        (r) => [r.local_id],
      )
    },

    /** Synced facts of one kind, newest received first. */
    async facts(instancePk: string, kind: FactType, query: PageQuery): Promise<Page<SyncedRecord>> {
      const size = pageSize(query)
      const after = decodeCursor(query.cursor, ['number'])
      let q = db.selectFrom('tower_facts').select(['seq', 'data', 'received_at']).where('instance_pk', '=', instancePk).where('kind', '=', kind)
      if (after) q = q.where('seq', '<', after[0])
      const rows = await q
        .orderBy('seq', 'desc')
        .limit(size + 1)
        .execute()
      return toPage(
        rows,
        size,
        (r) => ({ receivedAt: r.received_at.toISOString(), data: r.data as unknown as Record<string, unknown> }),
        (r) => [Number(r.seq)],
      )
    },
  }
}
