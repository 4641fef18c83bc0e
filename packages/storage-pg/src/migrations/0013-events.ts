import { sql, type Kysely } from 'kysely'

/**
 * Live events read the activity log in commit order. Each entry records its writing transaction
 * (`txid`, as the outbox does), and a reader takes only entries whose transaction and every older
 * one have ended (txid below the snapshot's xmin), ordered by (txid, id): a row that commits late
 * always sorts after what was already read, so a cursor over the feed never skips one.
 *
 * The column is added without a default first (instant on a large table) and the default set
 * after, so only new rows carry a txid; older entries are not part of the feed (a client resuming
 * from before the upgrade is told to resync).
 */
export const statements = [
  `alter table activity add column txid bigint`,
  `alter table activity alter column txid set default (pg_current_xact_id()::text::bigint)`,
  // The node-wide tail (every squad) and a squad's own catch-up after Last-Event-ID.
  `create index activity_feed on activity (txid, id) where txid is not null`,
  `create index activity_squad_feed on activity (squad_id, txid, id) where txid is not null`,
  // Live output of runs, in throttled chunks: the run.output events of the feed, and the tail the
  // output route answers while a run is still going. A run keeps its last 64 KiB or so; the rows go
  // with the output retention (like the output tail), or with the run.
  `create table heartbeat_run_output (
    id bigserial primary key,
    run_id uuid not null references heartbeat_runs (id) on delete cascade,
    squad_id uuid not null,
    agent_id uuid,
    issue_id uuid,
    stream text not null,
    text text not null,
    "offset" bigint not null,
    txid bigint not null default (pg_current_xact_id()::text::bigint),
    created_at timestamptz not null default now()
  )`,
  `create index heartbeat_run_output_run on heartbeat_run_output (run_id, id)`,
  `create index heartbeat_run_output_feed on heartbeat_run_output (txid, id)`,
  `create index heartbeat_run_output_squad_feed on heartbeat_run_output (squad_id, txid, id)`,
  // Output retention (the run engine's retention job) deletes by age.
  `create index heartbeat_run_output_created on heartbeat_run_output (created_at)`,
]

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw(`drop table if exists heartbeat_run_output`).execute(db)
  await sql.raw(`drop index if exists activity_squad_feed`).execute(db)
  await sql.raw(`drop index if exists activity_feed`).execute(db)
  await sql.raw(`alter table activity drop column if exists txid`).execute(db)
}
