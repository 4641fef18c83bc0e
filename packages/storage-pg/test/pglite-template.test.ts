import t from 'tap'
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { loadPgliteTemplate, tarDirectory, type PgliteTemplate } from '../src/pglite-template.js'

// A fresh embedded database is a copy of a cached template: its data directory (copied for an
// on-disk database) or its tarball (loaded for memory://), both made from a database that was
// shut down cleanly, so that opening a copy runs no crash recovery.

/** pg_control's `state` (offset 16, after the system identifier and two versions): 1 is DB_SHUTDOWNED. */
function controlState(pgdata: string): number {
  return readFileSync(join(pgdata, 'global/pg_control')).readInt32LE(16)
}

t.test('the template is built once, shut down cleanly, and both forms of it open', async (t) => {
  const cache = mkdtempSync(join(tmpdir(), 'slaw-template-test-'))
  t.teardown(() => import('node:fs/promises').then((fs) => fs.rm(cache, { recursive: true, force: true })))

  const first = await pgliteStorage({ dataDir: 'memory://', templateDir: cache })
  const names = readdirSync(cache).sort()
  t.equal(names.length, 2, `a data directory and its tarball: ${names.join(', ')}`)
  const dir = join(cache, names[0]!)
  t.ok(names[1] === `${names[0]}.tar`)
  t.equal(controlState(dir), 1, 'the cached data directory was shut down cleanly')
  const migrated = await sql<{ n: number }>`select count(*)::int as n from information_schema.tables where table_schema = 'public'`.execute(first.db)
  t.ok(migrated.rows[0]!.n > 10, 'memory://: the schema is there')
  const databases = await sql<{ datname: string }>`select datname from pg_database`.execute(first.db)
  t.same(databases.rows, [{ datname: 'postgres' }], "initdb's template databases are not in the template")
  await first.close()

  // On disk: a copy of the data directory; the data outlives a restart.
  const data = mkdtempSync(join(tmpdir(), 'slaw-template-data-'))
  t.teardown(() => import('node:fs/promises').then((fs) => fs.rm(data, { recursive: true, force: true })))
  const onDisk = await pgliteStorage({ dataDir: data, templateDir: cache })
  t.same(readdirSync(cache).sort(), names, 'no second template')
  await sql`create table kept (v text)`.execute(onDisk.db)
  await sql`insert into kept values ('still here')`.execute(onDisk.db)
  await onDisk.close()
  t.same(readdirSync(data), ['pgdata'], 'no copy left aside')
  t.equal(controlState(dir), 1, 'the template itself was never opened')
  const again = await pgliteStorage({ dataDir: data, templateDir: cache })
  t.same((await sql<{ v: string }>`select v from kept`.execute(again.db)).rows, [{ v: 'still here' }])
  await again.close()

  // An empty pgdata (say, made by hand) is fresh too.
  const empty = mkdtempSync(join(tmpdir(), 'slaw-template-empty-'))
  t.teardown(() => import('node:fs/promises').then((fs) => fs.rm(empty, { recursive: true, force: true })))
  await mkdir(join(empty, 'pgdata'))
  const fromEmpty = await pgliteStorage({ dataDir: empty, templateDir: cache })
  t.ok(existsSync(join(empty, 'pgdata/PG_VERSION')))
  await fromEmpty.close()
})

t.test('tarDirectory writes a ustar archive PGlite loads', async (t) => {
  const src = mkdtempSync(join(tmpdir(), 'slaw-tar-test-'))
  t.teardown(() => import('node:fs/promises').then((fs) => fs.rm(src, { recursive: true, force: true })))
  await mkdir(join(src, 'a/b/empty'), { recursive: true })
  await writeFile(join(src, 'a/b/file.txt'), 'x'.repeat(1000))
  await writeFile(join(src, 'top'), '')
  const tar = await tarDirectory(src)
  t.equal(tar.length % 512, 0)
  // The memory:// path above loads a real one; here the entries, read back as tar(1) lays them out.
  const entries: Array<{ name: string; type: string; size: number }> = []
  for (let at = 0; at + 512 <= tar.length && tar[at] !== 0; ) {
    const name = tar
      .subarray(at, at + 100)
      .toString('utf8')
      .replace(/\0.*$/s, '')
    const size = parseInt(tar.subarray(at + 124, at + 136).toString('ascii'), 8)
    entries.push({ name, type: String.fromCharCode(tar[at + 156]!), size })
    at += 512 + Math.ceil(size / 512) * 512
  }
  t.same(entries, [
    { name: 'a', type: '5', size: 0 },
    { name: 'a/b', type: '5', size: 0 },
    { name: 'a/b/empty', type: '5', size: 0 },
    { name: 'a/b/file.txt', type: '0', size: 1000 },
    { name: 'top', type: '0', size: 0 },
  ])
})

// Regression: test processes starting together on a cold cache each built the tarball and renamed
// it over the file, and a file-backed Blob fails once its file changes, so a process that had
// already opened the first copy failed to boot (NotReadableError) when a later builder replaced it.
t.test('builders racing on a cold cache all get a tarball that stays readable', async (t) => {
  const cache = mkdtempSync(join(tmpdir(), 'slaw-template-race-'))
  t.teardown(() => import('node:fs/promises').then((fs) => fs.rm(cache, { recursive: true, force: true })))
  const template: PgliteTemplate = {
    name: 'race',
    keyParts: ['race'],
    options: {},
    async build(pg) {
      await pg.exec('create table t (x int)')
    },
  }
  const blobs = await Promise.all(
    [0, 1, 2].map(async (i) => {
      // Staggered by whole event-loop turns, so the builders finish one after another.
      for (let n = 0; n < i * 50; n++) await new Promise((r) => setImmediate(r))
      return loadPgliteTemplate(cache, template)
    }),
  )
  const sizes = await Promise.all(blobs.map(async (b) => (await b.arrayBuffer()).byteLength))
  t.ok(
    sizes.every((n) => n > 0 && n === sizes[0]),
    'every Blob reads whole, and all are the same file',
  )
  t.same(
    readdirSync(cache).filter((f) => f.endsWith('.tmp')),
    [],
    'no temporary file left behind',
  )
})
