import { sql, type Kysely } from 'kysely'

/**
 * The tower's tables, all prefixed `tower_` so a tower may share a database with anything else.
 * Every lookup the tower runs has an index below; the comment above each says which.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const statements = [
    `create table tower_instances (
      id uuid primary key,
      machine_id text not null,
      instance_id text not null,
      hostname text not null,
      os text not null,
      slaw_version text not null,
      report_issue_titles boolean not null default true,
      live_stream boolean not null default false,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      last_seen_at timestamptz,
      last_heartbeat_at timestamptz,
      heartbeat_interval_sec integer not null default 60,
      status text,
      uptime_sec bigint,
      counts jsonb,
      spend_today_cents bigint,
      spend_month_cents bigint,
      last_event_cursor text,
      applied_limit_version bigint,
      applied_skill_catalog_version bigint,
      delivered_limit_version bigint not null default 0,
      delivered_catalog_version bigint not null default 0,
      acknowledged_cursor text,
      last_sync_at timestamptz,
      last_manifest_at timestamptz,
      manifest_counts jsonb
    )`,
    // Enroll: find the instance by its identity; one row per identity.
    `create unique index tower_instances_identity on tower_instances (machine_id, instance_id)`,
    // Admin list, newest first, keyset-paginated.
    `create index tower_instances_created on tower_instances (created_at desc, id desc)`,

    `create table tower_enrollments (
      id uuid primary key,
      instance_pk uuid not null references tower_instances (id) on delete cascade,
      state text not null check (state in ('pending', 'active', 'rejected', 'revoked')),
      api_key_hash text,
      key_delivered_at timestamptz,
      decided_by text,
      decided_at timestamptz,
      reason text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`,
    // Every authenticated call: key hash to enrollment.
    `create unique index tower_enrollments_key on tower_enrollments (api_key_hash) where api_key_hash is not null`,
    // At most one pending and one active enrollment per instance (a key-recovery request can be pending beside the active one).
    `create unique index tower_enrollments_one_pending on tower_enrollments (instance_pk) where state = 'pending'`,
    `create unique index tower_enrollments_one_active on tower_enrollments (instance_pk) where state = 'active'`,
    // Enroll and admin listing: the latest enrollment of an instance.
    `create index tower_enrollments_instance on tower_enrollments (instance_pk, created_at desc)`,
    // Admin list of enrollments, by state, newest first.
    `create index tower_enrollments_state on tower_enrollments (state, created_at desc, id desc)`,
    `create index tower_enrollments_created on tower_enrollments (created_at desc, id desc)`,

    `create table tower_entities (
      instance_pk uuid not null references tower_instances (id) on delete cascade,
      type text not null,
      local_id text not null,
      squad_local_id text,
      updated_at timestamptz not null,
      data jsonb not null,
      received_at timestamptz not null default now(),
      primary key (instance_pk, type, local_id)
    )`,
    // The primary key serves the upsert conflict target, the admin list per type and the manifest counts.

    `create table tower_facts (
      seq bigint generated always as identity,
      instance_pk uuid not null references tower_instances (id) on delete cascade,
      local_id text not null,
      kind text not null,
      squad_local_id text,
      occurred_at timestamptz not null,
      data jsonb not null,
      received_at timestamptz not null default now(),
      primary key (instance_pk, local_id)
    )`,
    // The primary key is the dedup key. Admin list per kind, newest first; manifest cost_event count.
    `create index tower_facts_kind on tower_facts (instance_pk, kind, seq desc)`,

    `create table tower_directives (
      id bigint generated always as identity primary key,
      instance_pk uuid not null references tower_instances (id) on delete cascade,
      directive jsonb not null,
      created_at timestamptz not null default now(),
      delivered_at timestamptz
    )`,
    // Delivery in heartbeat and sync responses: the undelivered ones of an instance, in order.
    `create index tower_directives_pending on tower_directives (instance_pk, id) where delivered_at is null`,
    // Admin list per instance.
    `create index tower_directives_instance on tower_directives (instance_pk, id desc)`,

    `create sequence tower_limit_version`,
    `create table tower_limits (
      version bigint primary key,
      instance_pk uuid references tower_instances (id) on delete cascade,
      spec jsonb not null,
      created_at timestamptz not null default now()
    )`,
    // The effective limit of an instance: the newest of its own and the fleet-wide (null) one.
    `create index tower_limits_scope on tower_limits (instance_pk, version desc)`,

    `create table tower_skills (
      key text primary key,
      slug text not null,
      name text not null,
      description text,
      category text,
      trust_level text not null,
      version integer not null,
      content_hash text not null,
      markdown text not null,
      files jsonb not null default '[]',
      metadata jsonb,
      published boolean not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`,
    // GET /skills lists the published ones by key.
    `create index tower_skills_published on tower_skills (key) where published`,

    `create table tower_catalog (
      id smallint primary key check (id = 1),
      version bigint not null
    )`,
    `insert into tower_catalog (id, version) values (1, 0)`,

    `create table tower_auto_approve_rules (
      id uuid primary key,
      kind text not null check (kind in ('all', 'hostname', 'machine_ids')),
      pattern text,
      machine_ids jsonb,
      note text,
      created_at timestamptz not null default now()
    )`,
  ]
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['tower_auto_approve_rules', 'tower_catalog', 'tower_skills', 'tower_limits', 'tower_directives', 'tower_facts', 'tower_entities', 'tower_enrollments', 'tower_instances']) {
    await sql.raw(`drop table if exists ${table}`).execute(db)
  }
  await sql.raw('drop sequence if exists tower_limit_version').execute(db)
}
