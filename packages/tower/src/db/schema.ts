import type { ColumnType, Generated, RawBuilder } from 'kysely'

/** Kysely's view of the tower's tables (see migrations/). int8 columns read as JS numbers (see database.ts). */
type Big = number
/** jsonb: written through storage-pg's json(), read as the parsed value. */
type Json<T> = ColumnType<T, RawBuilder<unknown>, RawBuilder<unknown>>
type CreatedAt = ColumnType<Date, never, never>
type Timestamptz = ColumnType<Date, Date | string, Date | string>
type DefaultNow = ColumnType<Date, Date | string | undefined, Date | string>

interface InstancesTable {
  id: string
  machine_id: string
  instance_id: string
  hostname: string
  os: string
  slaw_version: string
  report_issue_titles: boolean
  live_stream: boolean
  created_at: CreatedAt
  updated_at: DefaultNow
  last_seen_at: Timestamptz | null
  last_heartbeat_at: Timestamptz | null
  heartbeat_interval_sec: Generated<number>
  status: string | null
  uptime_sec: Big | null
  counts: Json<{ squads: number; agents: number; activeRuns: number; openIssues: number }> | null
  spend_today_cents: Big | null
  spend_month_cents: Big | null
  last_event_cursor: string | null
  applied_limit_version: Big | null
  applied_skill_catalog_version: Big | null
  delivered_limit_version: Generated<Big>
  delivered_catalog_version: Generated<Big>
  acknowledged_cursor: string | null
  last_sync_at: Timestamptz | null
  last_manifest_at: Timestamptz | null
  manifest_counts: Json<Record<string, number>> | null
}

interface EnrollmentsTable {
  id: string
  instance_pk: string
  state: 'pending' | 'active' | 'rejected' | 'revoked'
  api_key_hash: string | null
  key_delivered_at: Timestamptz | null
  decided_by: string | null
  decided_at: Timestamptz | null
  reason: string | null
  created_at: CreatedAt
  updated_at: DefaultNow
}

interface EntitiesTable {
  instance_pk: string
  type: string
  local_id: string
  squad_local_id: string | null
  updated_at: Timestamptz
  data: Json<Record<string, unknown>>
  received_at: DefaultNow
}

interface FactsTable {
  seq: ColumnType<number, never, never>
  instance_pk: string
  local_id: string
  kind: string
  squad_local_id: string | null
  occurred_at: Timestamptz
  data: Json<Record<string, unknown>>
  received_at: DefaultNow
}

interface DirectivesTable {
  id: ColumnType<number, never, never>
  instance_pk: string
  directive: Json<Record<string, unknown>>
  created_at: CreatedAt
  delivered_at: Timestamptz | null
}

interface LimitsTable {
  version: Big
  instance_pk: string | null
  spec: Json<Record<string, unknown>>
  created_at: CreatedAt
}

export interface SkillsTable {
  key: string
  slug: string
  name: string
  description: string | null
  category: string | null
  trust_level: string
  version: number
  content_hash: string
  markdown: string
  files: Json<Array<{ path: string; content: string; encoding: 'utf8' | 'base64' }>>
  metadata: Json<Record<string, unknown>> | null
  published: boolean
  created_at: CreatedAt
  updated_at: DefaultNow
}

interface CatalogTable {
  id: number
  version: Big
}

interface AutoApproveRulesTable {
  id: string
  kind: 'all' | 'hostname' | 'machine_ids'
  pattern: string | null
  machine_ids: Json<string[]> | null
  note: string | null
  created_at: CreatedAt
}

interface ConsoleSessionsTable {
  token_hash: string
  created_at: CreatedAt
  expires_at: Date
}

export interface TowerDatabase {
  tower_instances: InstancesTable
  tower_enrollments: EnrollmentsTable
  tower_entities: EntitiesTable
  tower_facts: FactsTable
  tower_directives: DirectivesTable
  tower_limits: LimitsTable
  tower_skills: SkillsTable
  tower_catalog: CatalogTable
  tower_auto_approve_rules: AutoApproveRulesTable
  tower_console_sessions: ConsoleSessionsTable
}
