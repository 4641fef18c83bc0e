import { sql, type Kysely } from 'kysely'
import { migrations } from './index.js'

/** Kysely's Migrator takes this advisory lock (PostgresAdapter): the two paths exclude each other. */
const migrationLockId = '3853314791062309107'

/**
 * The Migrator's own bookkeeping tables, as it creates them (kysely 0.28, `migrationTableName:
 * 'slaw_migration'`), so that a later start with a new migration finds what the Migrator expects.
 */
const bookkeeping = [
  'create table slaw_migration ("name" varchar(255) not null primary key, "timestamp" varchar(255) not null)',
  'create table slaw_migration_lock ("id" varchar(255) not null primary key, "is_locked" integer default 0 not null)',
  `insert into slaw_migration_lock ("id", "is_locked") values ('migration_lock', 0)`,
]

/**
 * Migrates a database slaw has never migrated (no `slaw_migration` table) in one transaction: every
 * migration's statements, then the Migrator's tables and one row per migration, as the Migrator
 * would leave them. With `scripts` (postgres.js, whose parameterless queries use the simple
 * protocol) the statements go as one script, one round trip instead of one per statement: the
 * Migrator's ~200 round trips and its catalog scans were most of a first start on PostgreSQL.
 *
 * Resolves false, having changed nothing, when another node migrated first (checked under the
 * Migrator's advisory lock) or when a migration is not plain statements; the caller then hands
 * over to the Migrator, which also reports a failing migration by name.
 */
export async function migrateEmptyDatabase(db: Kysely<unknown>, options: { scripts: boolean }): Promise<boolean> {
  const entries = Object.entries(migrations)
  const statements = entries.map(([, m]) => (m as { statements?: unknown }).statements)
  if (!statements.every((s): s is string[] => Array.isArray(s) && s.every((x) => typeof x === 'string'))) return false
  // Names are this build's constants; checked anyway, as they are written into SQL text.
  if (!entries.every(([name]) => /^[\w-]+$/.test(name))) return false
  const at = new Date().toISOString()
  const rows = entries.map(([name]) => `('${name}', '${at}')`).join(', ')
  const script = [...statements.flat(), ...bookkeeping, `insert into slaw_migration ("name", "timestamp") values ${rows}`]
  try {
    return await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${sql.lit(migrationLockId)}::bigint)`.execute(trx)
      const {
        rows: [table],
      } = await sql<{ exists: boolean }>`select to_regclass('slaw_migration') is not null as exists`.execute(trx)
      if (table?.exists) return false
      if (options.scripts) await sql.raw(script.join(';\n')).execute(trx)
      else for (const statement of script) await sql.raw(statement).execute(trx)
      return true
    })
  } catch {
    // Rolled back: the Migrator runs them one by one and says which failed.
    return false
  }
}
