import { sql, type Kysely } from 'kysely'

/**
 * Fleet page sign-in sessions (docs/tower.md, Fleet page): the HMAC-SHA256 of the cookie token under
 * the admin key (never the token; a session made under another admin key is no longer found), and
 * when it expires.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(`create table tower_console_sessions (
    token_hash text primary key,
    created_at timestamptz not null default now(),
    expires_at timestamptz not null
  )`)
    .execute(db)
  await sql.raw('create index tower_console_sessions_expires on tower_console_sessions (expires_at)').execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw('drop table if exists tower_console_sessions').execute(db)
}
