import t from 'tap'
import { sql } from 'kysely'
import { openPglite, pgliteStorage } from '@slaw/storage-pg/pglite'
import { migrations } from '../src/migrations/index.js'

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
