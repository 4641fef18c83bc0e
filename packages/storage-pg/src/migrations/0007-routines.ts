import { sql, type Kysely } from 'kysely'

/**
 * Routines: recurring issue templates, their revisions, triggers and runs.
 *
 * Exactly one fire per due time is structural: a schedule trigger's next due time is a column that
 * nodes claim with FOR UPDATE SKIP LOCKED and advance in the same transaction that records the
 * runs, and `routine_runs_trigger_due` refuses a second run for the same (trigger, due time).
 */
export const statements = [
  `create table routines (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    title text not null,
    description text,
    project_id uuid references projects (id) on delete set null,
    goal_id uuid references goals (id) on delete set null,
    parent_issue_id uuid references issues (id) on delete set null,
    assignee_agent_id uuid references agents (id) on delete set null,
    priority text not null default 'medium',
    status text not null default 'active' check (status in ('active', 'paused', 'archived')),
    concurrency_policy text not null default 'coalesce_if_active' check (concurrency_policy in ('coalesce_if_active', 'always_enqueue', 'skip_if_active')),
    catch_up_policy text not null default 'skip_missed' check (catch_up_policy in ('skip_missed', 'enqueue_missed_with_cap')),
    variables jsonb not null default '[]',
    env jsonb not null default '{}',
    revision_id uuid not null,
    revision_number integer not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  // The squad's routine list (UUIDv7 ids: id order is creation order).
  `create index routines_squad on routines (squad_id, id)`,

  `create table routine_revisions (
    id uuid primary key,
    routine_id uuid not null references routines (id) on delete cascade,
    squad_id uuid not null references squads (id) on delete cascade,
    number integer not null,
    change text not null,
    snapshot jsonb not null,
    actor_type text not null,
    actor_id text not null,
    created_at timestamptz not null default now()
  )`,
  // One number per revision of a routine; serves the revision list (newest first).
  `create unique index routine_revisions_routine_number on routine_revisions (routine_id, number)`,

  `create table routine_triggers (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    routine_id uuid not null references routines (id) on delete cascade,
    kind text not null check (kind in ('schedule', 'webhook', 'api')),
    label text,
    enabled boolean not null default true,
    cron_expression text,
    timezone text,
    next_fire_at timestamptz,
    signing_mode text check (signing_mode in ('bearer', 'hmac_sha256', 'vcs_hmac', 'none')),
    replay_window_sec integer,
    public_id text,
    secret_hash text,
    secret_ciphertext text,
    secret_rotated_at timestamptz,
    last_fired_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  `create index routine_triggers_routine on routine_triggers (routine_id, id)`,
  `create unique index routine_triggers_public_id on routine_triggers (public_id) where public_id is not null`,
  // The scheduler's claim: due schedules in due order.
  `create index routine_triggers_due on routine_triggers (next_fire_at) where kind = 'schedule' and enabled`,

  `create table routine_runs (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    routine_id uuid not null references routines (id) on delete cascade,
    trigger_id uuid references routine_triggers (id) on delete set null,
    source text not null check (source in ('manual', 'api', 'webhook', 'schedule')),
    status text not null check (status in ('queued', 'issue_created', 'coalesced', 'skipped', 'failed')),
    scheduled_for timestamptz,
    idempotency_key text,
    variables jsonb not null default '{}',
    payload jsonb,
    project_id uuid,
    assignee_agent_id uuid,
    issue_id uuid references issues (id) on delete set null,
    linked_run_id uuid,
    error text,
    created_at timestamptz not null default now(),
    finished_at timestamptz
  )`,
  // The run list (newest first) and the active-run lookup.
  `create index routine_runs_routine on routine_runs (routine_id, id)`,
  `create unique index routine_runs_trigger_due on routine_runs (trigger_id, scheduled_for)`,
  `create unique index routine_runs_idempotency on routine_runs (routine_id, idempotency_key)`,
  // An issue delete sets issue_id null without scanning every run.
  `create index routine_runs_issue on routine_runs (issue_id) where issue_id is not null`,
]

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['routine_runs', 'routine_triggers', 'routine_revisions', 'routines']) await sql.raw(`drop table if exists ${table}`).execute(db)
}
