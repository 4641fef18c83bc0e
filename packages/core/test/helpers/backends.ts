import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { pgStorage } from '@slaw/storage-pg'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
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

/** A new database on the test server, dropped again by `dispose`. */
export async function freshDatabase(): Promise<{ url: string; dispose(): Promise<void> }> {
  if (!testDatabaseUrl) throw new Error('SLAW_TEST_DATABASE_URL is not set')
  const name = `slaw_t_${randomBytes(6).toString('hex')}`
  const admin = postgres(testDatabaseUrl, { max: 1, onnotice: () => undefined })
  await admin.unsafe(`create database ${name}`)
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

export const backends: Backend[] = [
  {
    name: 'pglite',
    skip: undefined,
    async create() {
      const storage = await pgliteStorage({ dataDir: 'memory://' })
      return { storage, dispose: () => storage.close() }
    },
  },
  {
    name: 'postgres',
    skip: testDatabaseUrl ? undefined : 'PostgreSQL suite skipped: set SLAW_TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to run it',
    async create() {
      const db = await freshDatabase()
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
