import t, { type Test } from 'tap'
import postgres from 'postgres'
import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryResult } from 'kysely'
import { KyselyStorage, PostgresJsDialect } from '@slaw/storage-pg'
import { PGliteDialect, openPglite } from '@slaw/storage-pg/pglite'
import { freshDatabase, testDatabaseUrl } from '../../core/test/helpers/backends.js'

/** A dialect whose connections log when each query is handed over and when it is answered. */
function recording(inner: Dialect, log: string[]): Dialect {
  const tag = (q: CompiledQuery) => q.sql.trim().split(/\s+/).slice(0, 4).join(' ')
  const wrap = (c: DatabaseConnection): DatabaseConnection => ({
    async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
      log.push(`sent ${tag(q)}`)
      try {
        return await c.executeQuery<R>(q)
      } finally {
        log.push(`answered ${tag(q)}`)
      }
    },
    streamQuery: (q, n) => c.streamQuery(q, n),
  })
  return {
    createAdapter: () => inner.createAdapter(),
    createIntrospector: (db) => inner.createIntrospector(db),
    createQueryCompiler: () => inner.createQueryCompiler(),
    createDriver: (): Driver => {
      const d = inner.createDriver()
      // Each wrapper handed out, and the driver's connection under it.
      const under = new WeakMap<DatabaseConnection, DatabaseConnection>()
      const unwrap = (w: DatabaseConnection) => under.get(w) ?? w
      return {
        init: () => d.init(),
        acquireConnection: async () => {
          const c = await d.acquireConnection()
          const w = wrap(c)
          under.set(w, c)
          return w
        },
        beginTransaction: (c, s) => d.beginTransaction(unwrap(c), s),
        commitTransaction: (c) => d.commitTransaction(unwrap(c)),
        rollbackTransaction: (c) => d.rollbackTransaction(unwrap(c)),
        releaseConnection: (c) => d.releaseConnection(unwrap(c)),
        destroy: () => d.destroy(),
      }
    },
  }
}

async function pipelines(t: Test, storage: KyselyStorage, log: string[]): Promise<void> {
  await storage.migrate()
  log.length = 0
  const id = '0190a5a3-7d4e-7c3b-8f00-000000000001'
  const [a, b, c] = await storage.transaction(() => Promise.all([storage.squads.get(id), storage.agents.get(id), storage.issues.get(id)]))
  t.same([a, b, c], [undefined, undefined, undefined], 'the reads answered (nothing there)')
  const reads = log.filter((l) => l.startsWith('sent select') || l.startsWith('answered select'))
  t.same(
    reads.map((l) => l.split(' ')[0]),
    ['sent', 'sent', 'sent', 'answered', 'answered', 'answered'],
    'all three reads of the transaction were handed to its connection before the first was answered',
  )
  // It is a transaction to the code that asks (the outbox publishes inside a caller's transaction).
  await storage.transaction(async () => {
    const view = (storage as unknown as { current: { getStore(): { trx: { isTransaction: boolean } } | undefined } }).current.getStore()?.trx
    t.equal(view?.isTransaction, true, 'the view says it is a transaction')
    t.same(await storage.outbox.readAfter('0', 10), [], 'the outbox publishes and reads inside a transaction')
  })
  // After commit, the view refuses to run anything on the connection it borrowed.
  let view: unknown
  await storage.transaction(async () => {
    view = (storage as unknown as { current: { getStore(): { trx: unknown } | undefined } }).current.getStore()?.trx
  })
  await t.rejects(
    (view as { selectFrom(t: string): { selectAll(): { execute(): Promise<unknown> } } }).selectFrom('squads').selectAll().execute(),
    /committed|rolled back/i,
    'a query after commit fails',
  )
  // A throw still rolls everything back.
  await t.rejects(
    storage.transaction(async () => {
      await storage.squads.get(id)
      throw new Error('boom')
    }),
    /boom/,
  )
}

t.test('PGlite', async (t) => {
  const log: string[] = []
  const client = await openPglite({ dataDir: 'memory://' })
  const storage = new KyselyStorage({ name: 'pglite', dialect: recording(new PGliteDialect(client), log) })
  t.teardown(async () => {
    await storage.close()
    await client.close()
  })
  await pipelines(t, storage, log)
})

t.test('PostgreSQL', testDatabaseUrl ? {} : { skip: 'PostgreSQL suite skipped: set SLAW_TEST_DATABASE_URL to run it' }, async (t) => {
  const db = await freshDatabase({ migrated: true })
  const log: string[] = []
  const storage = new KyselyStorage({ name: 'postgres', dialect: recording(new PostgresJsDialect(postgres(db.url, { max: 2, onnotice: () => undefined })), log) })
  t.teardown(async () => {
    await storage.close()
    await db.dispose()
  })
  await pipelines(t, storage, log)
})
