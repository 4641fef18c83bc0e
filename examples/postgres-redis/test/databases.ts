// The test's PostgreSQL and Redis: SLAW_TEST_DATABASE_URL (a server where the test may create and drop
// databases, e.g. postgres://postgres@127.0.0.1:5432/postgres) and SLAW_TEST_REDIS_URL. Each test gets
// a database of its own, dropped at its end.
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'

export const testDatabaseUrl = process.env.SLAW_TEST_DATABASE_URL
export const testRedisUrl = process.env.SLAW_TEST_REDIS_URL

/** Creates an empty database on the test server; the nodes migrate it when they start. */
export async function freshDatabase(): Promise<{ url: string; dispose(): Promise<void> }> {
  if (!testDatabaseUrl) throw new Error('SLAW_TEST_DATABASE_URL is not set')
  const name = `slaw_example_${randomBytes(6).toString('hex')}`
  const admin = postgres(testDatabaseUrl, { max: 1, onnotice: () => undefined })
  try {
    await admin.unsafe(`create database ${name}`)
  } finally {
    await admin.end()
  }
  const url = new URL(testDatabaseUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async dispose() {
      const a = postgres(testDatabaseUrl!, { max: 1, onnotice: () => undefined })
      try {
        await a.unsafe(`drop database if exists ${name} with (force)`)
      } finally {
        await a.end()
      }
    },
  }
}
