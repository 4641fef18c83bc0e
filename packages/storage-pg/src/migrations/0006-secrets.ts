import { sql, type Kysely } from 'kysely'

/**
 * Secrets: metadata, versions (the provider's reference; for local_encrypted the AES-GCM envelope
 * and the master key id it was written under), the access audit trail, provider configurations
 * (non-sensitive settings only), and the instance's master key id.
 */
export const statements = [
  `create table secret_provider_configs (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    provider text not null,
    name text not null,
    config jsonb not null default '{}',
    is_default boolean not null default false,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  // The squad's config list; one default per squad.
  `create index secret_provider_configs_squad on secret_provider_configs (squad_id, created_at)`,
  `create unique index secret_provider_configs_squad_default on secret_provider_configs (squad_id) where is_default`,

  `create table secrets (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    key text not null,
    name text not null,
    provider text not null,
    provider_config_id uuid references secret_provider_configs (id),
    status text not null check (status in ('active', 'disabled', 'archived', 'deleted')),
    managed_mode text not null check (managed_mode in ('svc_managed', 'external_reference')),
    external_ref text,
    latest_version integer not null default 0,
    description text,
    provider_metadata jsonb,
    last_resolved_at timestamptz,
    last_rotated_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  // A key is unique among the squad's live secrets (a deleted secret frees its key); serves the list by key.
  `create unique index secrets_squad_key on secrets (squad_id, key) where status <> 'deleted'`,
  // Remote import: "already imported" lookups.
  `create index secrets_external_ref on secrets (squad_id, provider_config_id, external_ref) where external_ref is not null and status <> 'deleted'`,
  `create index secrets_provider_config on secrets (provider_config_id) where provider_config_id is not null`,

  `create table secret_versions (
    secret_id uuid not null references secrets (id) on delete cascade,
    version integer not null,
    provider text not null,
    provider_config_id uuid,
    ref text not null,
    key_id text,
    provider_version_ref text,
    created_at timestamptz not null default now(),
    primary key (secret_id, version)
  )`,
  // Master-key rotation finds local envelopes by the key they were written under.
  `create index secret_versions_key_id on secret_versions (key_id) where key_id is not null`,

  `create table secret_access_events (
    id uuid primary key,
    secret_id uuid not null references secrets (id) on delete cascade,
    squad_id uuid not null,
    version integer,
    provider text not null,
    actor_type text not null,
    actor_id text not null,
    consumer_type text not null,
    consumer_id text not null,
    config_path text,
    issue_id uuid,
    heartbeat_run_id uuid,
    outcome text not null check (outcome in ('success', 'failure')),
    error_code text,
    created_at timestamptz not null default now()
  )`,
  // The audit trail of one secret, newest first (ids are UUIDv7: time-ordered).
  `create index secret_access_events_secret on secret_access_events (secret_id, id desc)`,

  // One row: the id (a hash, never the key) of the master key the data is encrypted under.
  `create table slaw_master_key (
    id smallint primary key check (id = 1),
    key_id text not null,
    updated_at timestamptz not null default now()
  )`,
]

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['slaw_master_key', 'secret_access_events', 'secret_versions', 'secrets', 'secret_provider_configs']) await sql.raw(`drop table if exists ${table}`).execute(db)
}
