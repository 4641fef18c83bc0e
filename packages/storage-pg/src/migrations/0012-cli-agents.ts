import { sql, type Kysely } from 'kysely'

/**
 * CLI agents (claude_local, codex_local) and usage that never lies about cost (docs/costs-and-budgets.md):
 * - cost events gain cache-write tokens and `cost_status` (reported, estimated, unpriced); an
 *   unpriced event keeps cost_cents 0 beside `unpriced`, never a bare 0;
 * - rollups count unpriced tokens and cache writes, so summaries show them apart from priced spend;
 * - runs keep their usage's detail (cache tokens, unpriced tokens, cost status, provider, biller,
 *   billing type), why they failed (`error_code`, `retry_not_before`), which upstream retry they
 *   are (`retry_attempt`), and the CLI session they ran in (`session_id`).
 */
export const statements = [
  `alter table cost_events add column cache_write_tokens bigint not null default 0,
                          add column cost_status text not null default 'reported'`,
  // Window spend and issue totals stay index-only scans: their indexes carry the new summed columns.
  `drop index if exists cost_events_window`,
  `create index cost_events_window on cost_events (squad_id, occurred_at)
     include (provider, billing_type, cost_status, cost_cents, input_tokens, cached_input_tokens, cache_write_tokens, output_tokens)`,
  `drop index if exists cost_events_issue`,
  `create index cost_events_issue on cost_events (issue_id)
     include (billing_type, cost_status, cost_cents, input_tokens, cached_input_tokens, cache_write_tokens, output_tokens) where issue_id is not null`,
  `alter table cost_rollups add column cache_write_tokens bigint not null default 0,
                           add column unpriced_tokens bigint not null default 0`,
  `alter table heartbeat_runs add column cached_input_tokens bigint not null default 0,
                             add column cache_write_tokens bigint not null default 0,
                             add column unpriced_tokens bigint not null default 0,
                             add column cost_status text,
                             add column provider text,
                             add column biller text,
                             add column billing_type text,
                             add column error_code text,
                             add column retry_not_before timestamptz,
                             add column retry_attempt integer not null default 0,
                             add column session_id text`,
  // Two running runs of an agent never resume one session: the start checks this under the slot lock.
  `create index heartbeat_runs_running_session on heartbeat_runs (agent_id, session_id) where status = 'running' and session_id is not null`,
]

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw('drop index if exists heartbeat_runs_running_session').execute(db)
  await sql
    .raw(`alter table heartbeat_runs drop column if exists cached_input_tokens, drop column if exists cache_write_tokens, drop column if exists unpriced_tokens,
    drop column if exists cost_status, drop column if exists provider, drop column if exists biller, drop column if exists billing_type,
    drop column if exists error_code, drop column if exists retry_not_before, drop column if exists retry_attempt, drop column if exists session_id`)
    .execute(db)
  await sql.raw('alter table cost_rollups drop column if exists cache_write_tokens, drop column if exists unpriced_tokens').execute(db)
  await sql.raw('alter table cost_events drop column if exists cache_write_tokens, drop column if exists cost_status').execute(db)
  await sql.raw('drop index if exists cost_events_window').execute(db)
  await sql.raw('create index cost_events_window on cost_events (squad_id, occurred_at) include (provider, billing_type, cost_cents, input_tokens, cached_input_tokens, output_tokens)').execute(db)
  await sql.raw('drop index if exists cost_events_issue').execute(db)
  await sql.raw('create index cost_events_issue on cost_events (issue_id) include (billing_type, cost_cents, input_tokens, cached_input_tokens, output_tokens) where issue_id is not null').execute(db)
}
