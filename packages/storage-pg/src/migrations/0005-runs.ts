import { sql, type Kysely } from 'kysely'

/**
 * Heartbeat runs and the durable job queue they ride on (docs/heartbeats.md):
 * - jobs gain retries with backoff (`max_attempts`), a dedupe key that holds while a job is
 *   unfinished, and an index for the retention sweep;
 * - agents gain their adapter config and an encrypted per-agent webhook signing secret;
 * - heartbeat_runs holds every run; at most one `queued` run per agent and issue (wake coalescing).
 */
export const statements = [
  `alter table jobs add column max_attempts integer not null default 5`,
  `alter table jobs add column dedupe_key text`,
  // Same key while queued or running: the second enqueue finds the first (one job per key).
  `create unique index jobs_dedupe on jobs (kind, dedupe_key) where dedupe_key is not null and status in ('queued', 'running')`,
  // Retention: finished jobs by age.
  `create index jobs_finished on jobs (finished_at) where status in ('completed', 'failed')`,

  `alter table agents add column adapter_config jsonb not null default '{}'`,
  `alter table agents add column webhook_secret text`,

  `create table heartbeat_runs (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    agent_id uuid not null references agents (id) on delete cascade,
    issue_id uuid references issues (id) on delete set null,
    reason text not null,
    status text not null default 'queued' check (status in ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out')),
    liveness text,
    approval_id uuid,
    comment_id uuid,
    routine_run_id uuid,
    coalesced_count integer not null default 0,
    continuation_depth integer not null default 0,
    node_id text,
    started_at timestamptz,
    finished_at timestamptz,
    deadline_at timestamptz,
    exit_code integer,
    http_status integer,
    error text,
    summary text,
    input_tokens bigint not null default 0,
    output_tokens bigint not null default 0,
    cost_cents bigint not null default 0,
    output_tail text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  // Coalescing: one queued run per agent and issue (no issue counts as one issue).
  `create unique index heartbeat_runs_coalesce on heartbeat_runs (agent_id, (coalesce(issue_id, '00000000-0000-0000-0000-000000000000'::uuid))) where status = 'queued'`,
  // Run lists: by squad, by squad+agent, by squad+status, newest first (ids are uuidv7).
  `create index heartbeat_runs_squad on heartbeat_runs (squad_id, id desc)`,
  `create index heartbeat_runs_squad_agent on heartbeat_runs (squad_id, agent_id, id desc)`,
  `create index heartbeat_runs_squad_status on heartbeat_runs (squad_id, status, id desc)`,
  `create index heartbeat_runs_issue on heartbeat_runs (issue_id, id desc) where issue_id is not null`,
  // Concurrency caps count what is running; the deadline sweep finds overdue runs.
  `create index heartbeat_runs_running on heartbeat_runs (squad_id, agent_id) where status = 'running'`,
  `create index heartbeat_runs_deadline on heartbeat_runs (deadline_at) where status = 'running'`,
  // Retention: by finish time.
  `create index heartbeat_runs_finished on heartbeat_runs (finished_at) where finished_at is not null`,
  // Dashboard run activity: runs per squad, UTC day of creation and current status. Every status
  // change appends +1/-1 rows in its own transaction: append-only, so no writer ever waits on a
  // shared counter row (a counter locked until commit deadlocked wakes against run transitions).
  // The retention job folds past days into one row per status.
  `create table heartbeat_run_days (
    squad_id uuid not null references squads (id) on delete cascade,
    day date not null,
    status text not null,
    runs integer not null
  )`,
  `create index heartbeat_run_days_squad on heartbeat_run_days (squad_id, day)`,
  // Issues a run touched: every activity entry carrying the run id.
  `create index activity_run on activity (run_id, entity_type) where run_id is not null`,
]

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw('drop index if exists activity_run').execute(db)
  await sql.raw('drop table if exists heartbeat_run_days').execute(db)
  await sql.raw('drop table if exists heartbeat_runs').execute(db)
  await sql.raw('alter table agents drop column if exists webhook_secret, drop column if exists adapter_config').execute(db)
  await sql.raw('drop index if exists jobs_dedupe').execute(db)
  await sql.raw('drop index if exists jobs_finished').execute(db)
  await sql.raw('alter table jobs drop column if exists dedupe_key, drop column if exists max_attempts').execute(db)
}
