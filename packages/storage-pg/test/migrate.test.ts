import t from 'tap'
import { Kysely, Migrator, sql } from 'kysely'
import { PGlite } from '@electric-sql/pglite'
import { pgStorage } from '@slaw/storage-pg'
import { PGliteDialect, openPglite, pgliteStorage } from '@slaw/storage-pg/pglite'
import { migrationProvider, migrations } from '../src/migrations/index.js'
import { migrateEmptyDatabase } from '../src/migrations/empty-database.js'
import { freshDatabase, testDatabaseUrl } from '../../core/test/helpers/backends.js'

// migrate() on a database that has exactly this build's migrations is two small queries (the
// Migrator's catalog scans made up a sixth of a PGlite start); anything else still goes through
// Kysely's Migrator, which applies what is missing and refuses what it does not know.

async function openCounted() {
  const pg = await openPglite({ dataDir: 'memory://' })
  const seen: string[] = []
  const query = pg.query.bind(pg)
  pg.query = ((text: string, ...rest: unknown[]) => {
    seen.push(text)
    return (query as (...args: unknown[]) => unknown)(text, ...rest)
  }) as typeof pg.query
  const storage = await pgliteStorage({ client: pg })
  return { pg, storage, seen }
}

t.test('an up-to-date database: two queries, no catalog scan', async (t) => {
  const { pg, storage, seen } = await openCounted()
  t.teardown(() => pg.close())
  seen.length = 0
  await storage.migrate()
  t.equal(seen.length, 2, seen.join('\n'))
  t.notOk(
    seen.some((q) => /pg_attribute|information_schema|slaw_migration_lock/.test(q)),
    'no Migrator introspection',
  )
})

t.test('a migration not yet recorded is run by the Migrator, not skipped', async (t) => {
  const { pg, storage } = await openCounted()
  t.teardown(() => pg.close())
  const last = Object.keys(migrations).at(-1)!
  await sql`delete from slaw_migration where name = ${last}`.execute(storage.db)
  // The migration's objects are still there, so running it again may fail; either way the
  // Migrator ran it: it is recorded again, or migrate() names it.
  const err = await storage.migrate().then(
    () => undefined,
    (e: Error) => e,
  )
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from slaw_migration where name = ${last}`.execute(storage.db)
  t.ok(rows[0]!.n === 1 || (err && err.message.includes(last)), `ran ${last}: ${err?.message ?? 'recorded'}`)
})

t.test('a migration this build does not know is refused', async (t) => {
  const { pg, storage } = await openCounted()
  t.teardown(() => pg.close())
  await sql`insert into slaw_migration (name, timestamp) values ('9999-from-a-newer-slaw', now()::text)`.execute(storage.db)
  await t.rejects(storage.migrate(), /slaw migrations failed/)
})

/** Every table's columns and every index of the public schema, to compare two databases. */
async function schemaOf(db: Kysely<unknown>): Promise<string[]> {
  const { rows: columns } = await sql<{ c: string }>`
    select table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') as c
    from information_schema.columns where table_schema = 'public'`.execute(db)
  const { rows: indexes } = await sql<{ c: string }>`select indexdef as c from pg_indexes where schemaname = 'public'`.execute(db)
  const { rows: routines } = await sql<{ c: string }>`select p.proname || ' ' || md5(p.prosrc) as c from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'public'`.execute(db)
  return [...columns, ...indexes, ...routines].map((r) => r.c).sort()
}

t.test('a database never migrated gets every migration in one transaction, as the Migrator leaves it', async (t) => {
  // No template: PGlite's own initdb, an empty database.
  const fast = new PGlite()
  const slow = new PGlite()
  t.teardown(async () => {
    await fast.close()
    await slow.close()
  })
  const seen: string[] = []
  const query = fast.query.bind(fast)
  fast.query = ((text: string, ...rest: unknown[]) => {
    seen.push(text)
    return (query as (...args: unknown[]) => unknown)(text, ...rest)
  }) as typeof fast.query
  const storage = await pgliteStorage({ client: fast })
  await storage.migrate()
  t.notOk(
    seen.some((q) => /pg_attribute|information_schema/.test(q)),
    'no Migrator introspection',
  )
  const reference = new Kysely<unknown>({ dialect: new PGliteDialect(slow) })
  const { error } = await new Migrator({ db: reference, provider: migrationProvider, migrationTableName: 'slaw_migration', migrationLockTableName: 'slaw_migration_lock' }).migrateToLatest()
  t.error(error)
  t.same(await schemaOf(storage.db as unknown as Kysely<unknown>), await schemaOf(reference), 'the same tables, columns, indexes and functions')
  // The Migrator sees every migration as executed, so a later one is applied on top as before.
  const state = await new Migrator({ db: storage.db, provider: migrationProvider, migrationTableName: 'slaw_migration', migrationLockTableName: 'slaw_migration_lock' }).getMigrations()
  t.same(
    state.filter((m) => !m.executedAt).map((m) => m.name),
    [],
  )
  const { rows } = await sql<{ id: string; isLocked: number }>`select id, is_locked from slaw_migration_lock`.execute(storage.db)
  t.same(rows, [{ id: 'migration_lock', isLocked: 0 }])
})

t.test('PostgreSQL: a first start is one script; nodes starting together migrate once', { skip: testDatabaseUrl ? false : 'set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const db = await freshDatabase()
  t.teardown(db.dispose)
  const nodes = [pgStorage({ url: db.url, max: 2 }), pgStorage({ url: db.url, max: 2 }), pgStorage({ url: db.url, max: 2 })]
  t.teardown(() => Promise.all(nodes.map((n) => n.close())))
  await Promise.all(nodes.map((n) => n.migrate()))
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from slaw_migration`.execute(nodes[0]!.db)
  t.equal(rows[0]!.n, Object.keys(migrations).length)
  await nodes[1]!.migrate()
  // The one-script path itself, on a database of its own.
  const other = await freshDatabase()
  t.teardown(other.dispose)
  const storage = pgStorage({ url: other.url, max: 1 })
  t.teardown(() => storage.close())
  t.equal(await migrateEmptyDatabase(storage.db as unknown as Kysely<unknown>, { scripts: true }), true)
  t.equal(await migrateEmptyDatabase(storage.db as unknown as Kysely<unknown>, { scripts: true }), false, 'migrated already: nothing done')
  await storage.migrate()
})
