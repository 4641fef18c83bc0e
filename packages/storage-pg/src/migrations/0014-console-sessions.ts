import { sql, type Kysely } from 'kysely'

/**
 * Console sign-in sessions (docs/console.md): the SHA-256 of the cookie token (never the token),
 * the Operator key that signed in (deleting the key's row deletes its sessions; revoking it deletes
 * them through the service), and when the session expires.
 */
export const statements = [
  `create table console_sessions (
    id uuid primary key,
    token_hash text not null,
    key_id uuid not null references api_keys (id) on delete cascade,
    created_at timestamptz not null default now(),
    expires_at timestamptz not null
  )`,
  `create unique index console_sessions_token_hash on console_sessions (token_hash)`,
  `create index console_sessions_key on console_sessions (key_id)`,
  `create index console_sessions_expires on console_sessions (expires_at)`,
]

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw('drop table if exists console_sessions').execute(db)
}
