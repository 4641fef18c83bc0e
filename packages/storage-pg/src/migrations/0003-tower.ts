import { sql, type Kysely } from 'kysely'

/**
 * State of the tower client (@slaw/tower-client): identity, enrollment and its API key, the
 * acknowledged outbox cursor, applied limit and skill catalog versions, queued resyncs. A small
 * key/value table: every node sharing the database sees the same state, and writes of different
 * keys (the leader's cursor, an Operator's connect on another node) never overwrite each other.
 * Leases: one row per named lease; only the holder of `tower_reporter` talks to the tower.
 */
export const statements = [
  `create table tower_state (
    key text primary key,
    value jsonb not null,
    updated_at timestamptz not null default now()
  )`,
  `create table tower_leases (
    name text primary key,
    holder text not null,
    expires_at timestamptz not null
  )`,
]

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['tower_leases', 'tower_state']) await sql.raw(`drop table if exists ${table}`).execute(db)
}
