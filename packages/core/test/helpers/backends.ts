import tap from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { migrationFingerprint, pgStorage } from '@slaw/storage-pg'
import { openPglite, pgliteStorage } from '@slaw/storage-pg/pglite'
import type { PGlite } from '@electric-sql/pglite'
import type { Storage } from '@slaw/core'

/** The PostgreSQL server tests may create databases on; unset means the PostgreSQL suites are skipped. */
export const testDatabaseUrl = process.env.SLAW_TEST_DATABASE_URL
export const testRedisUrl = process.env.SLAW_TEST_REDIS_URL

export interface Backend {
  name: 'pglite' | 'postgres'
  /** Why this backend is skipped here, or undefined when it runs. */
  skip: string | undefined
  /** A fresh, empty (migrated on use) storage, and how to dispose of it. */
  create(): Promise<{ storage: Storage; url?: string; dispose(): Promise<void> }>
}

/**
 * A new database on the test server, dropped again by `dispose`. Empty by default; `migrated: true`
 * copies a migrated template instead (CREATE DATABASE … TEMPLATE), which skips running every
 * migration again for each test.
 */
export async function freshDatabase(options: { migrated?: boolean } = {}): Promise<{ url: string; dispose(): Promise<void> }> {
  if (!testDatabaseUrl) throw new Error('SLAW_TEST_DATABASE_URL is not set')
  const name = `slaw_t_${randomBytes(6).toString('hex')}`
  const template = options.migrated ? await migratedTemplate() : undefined
  const admin = postgres(testDatabaseUrl, { max: 1, onnotice: () => undefined })
  await admin.unsafe(`create database ${name}${template ? ` template ${template}` : ''}`)
  await admin.end()
  const url = new URL(testDatabaseUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async dispose() {
      const a = postgres(testDatabaseUrl!, { max: 1, onnotice: () => undefined })
      await a.unsafe(`drop database if exists ${name} with (force)`)
      await a.end()
    },
  }
}

let template: Promise<string> | undefined
/**
 * The migrated template database for the current migrations (named by a hash of their code, so an
 * edited or added migration gets a new one), built once per server: test processes running in
 * parallel take an advisory lock, and the first builds it while the others wait.
 */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const hash = createHash('sha256').update(migrationFingerprint())
    const name = `slaw_tpl_${hash.digest('hex').slice(0, 16)}`
    const admin = postgres(testDatabaseUrl!, { max: 1, onnotice: () => undefined })
    try {
      await admin`select pg_advisory_lock(hashtext(${name}))`
      const [found] = await admin`select 1 from pg_database where datname = ${name}`
      if (!found) {
        const building = `${name}_${randomBytes(4).toString('hex')}`
        await admin.unsafe(`create database ${building}`)
        const url = new URL(testDatabaseUrl!)
        url.pathname = `/${building}`
        const storage = pgStorage({ url: url.toString(), max: 1 })
        await storage.migrate()
        await storage.close()
        // Renamed only once complete: a half-built template is never copied.
        await admin.unsafe(`alter database ${building} rename to ${name}`)
      }
      await admin`select pg_advisory_unlock(hashtext(${name}))`
    } finally {
      await admin.end()
    }
    return name
  })()
  return template
}

/**
 * PGlite clients this test process has finished with, emptied and ready for the next test. Booting
 * PGlite from the template costs about a second of CPU; an empty database costs one statement. A
 * test still gets a database nobody else uses, with no rows and every sequence at its start.
 */
const idlePglite: PGlite[] = []
// Closed when the file's tests are over: an open PGlite keeps a 10-second timer of its server
// running, which would hold the test process that long after its last test.
tap.teardown(async () => {
  await Promise.all(idlePglite.splice(0).map((pg) => pg.close().catch(() => undefined)))
})

/** Empties every table but the migrator's and restarts every sequence; false if the client is unusable. */
async function emptyPglite(pg: PGlite): Promise<boolean> {
  try {
    await pg.exec(`do $$
      declare tables text; seq record;
      begin
        select string_agg(format('%I.%I', schemaname, tablename), ', ') into tables
          from pg_tables where schemaname = 'public' and tablename not like 'slaw\\_migration%';
        execute 'truncate ' || tables || ' restart identity cascade';
        for seq in select schemaname, sequencename from pg_sequences where schemaname = 'public' loop
          execute format('alter sequence %I.%I restart', seq.schemaname, seq.sequencename);
        end loop;
      end $$`)
    return true
  } catch {
    return false
  }
}

/** A migrated, empty PGlite storage; closing it hands its client back for the next test. */
export async function pooledPgliteStorage(): Promise<{ storage: Storage; dispose(): Promise<void> }> {
  const client = idlePglite.pop() ?? (await openPglite({ dataDir: 'memory://' }))
  const storage = await pgliteStorage({ client })
  let disposed = false
  return {
    storage,
    async dispose() {
      if (disposed) return
      disposed = true
      await storage.close()
      if (!client.closed && (await emptyPglite(client))) idlePglite.push(client)
      else await client.close().catch(() => undefined)
    },
  }
}

export const backends: Backend[] = [
  {
    name: 'pglite',
    skip: undefined,
    create: pooledPgliteStorage,
  },
  {
    name: 'postgres',
    skip: testDatabaseUrl ? undefined : 'PostgreSQL suite skipped: set SLAW_TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to run it',
    async create() {
      const db = await freshDatabase({ migrated: true })
      const storage = pgStorage({ url: db.url, max: 5 })
      return {
        storage,
        url: db.url,
        async dispose() {
          await storage.close()
          await db.dispose()
        },
      }
    },
  },
]
