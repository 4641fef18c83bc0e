import t from 'tap'
import { createServer } from 'node:net'
import postgres from 'postgres'
import { createInstance, type SlawInstance } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { redisLocks } from '@slaw/lock-redis'
import { freshDatabase, testDatabaseUrl } from './helpers/backends.js'

const operatorKey = 'slaw_op_health_test_key_000000001'
const health = async (instance: SlawInstance) => {
  const res = await instance.app.inject({ method: 'GET', url: '/api/health' })
  return { status: res.statusCode, body: JSON.parse(res.body) }
}
const deadPort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })

t.test('every part ok', async (t) => {
  const instance = await createInstance({ storage: await pgliteStorage({ dataDir: 'memory://' }), operatorKey, logger: false })
  t.teardown(() => instance.close())
  const h = await health(instance)
  t.equal(h.status, 200)
  t.equal(h.body.status, 'ok', 'the status field of docs/runtime-contract.md stays')
  t.same(h.body.parts, { storage: { status: 'ok' }, locks: { status: 'ok' }, tower: { status: 'ok', reason: 'no tower client' }, jobs: { status: 'ok' } })
})

t.test('a node without jobs, and unreachable Redis: degraded parts, still 200', async (t) => {
  const instance = await createInstance({ storage: await pgliteStorage({ dataDir: 'memory://' }), operatorKey, logger: false, jobs: false })
  t.teardown(() => instance.close())
  t.equal((await health(instance)).body.parts.jobs.reason, 'this node runs no jobs')

  // Locks only matter for checkouts: the instance serves, health says what is wrong.
  const locks = redisLocks({ url: `redis://127.0.0.1:${await deadPort()}` })
  const withRedis = await createInstance({
    storage: await pgliteStorage({ dataDir: 'memory://' }),
    operatorKey,
    logger: false,
    jobs: false,
    migrate: true,
    locks: { name: 'redis', withLock: (_k, _t, fn) => fn(), ping: () => locks.ping!(), close: () => locks.close() },
  })
  t.teardown(() => withRedis.close())
  const h = await health(withRedis)
  t.equal(h.status, 200)
  t.equal(h.body.parts.locks.status, 'degraded')
  t.match(h.body.parts.locks.reason, /redis is not reachable/)
})

t.test('storage down: 503 database_unavailable with the parts; back: 200', { skip: testDatabaseUrl ? false : 'set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const db = await freshDatabase()
  const instance = await createInstance({ storage: pgStorage({ url: db.url, max: 2 }), operatorKey, masterKey: '5a'.repeat(32), logger: false })
  const admin = postgres(testDatabaseUrl!, { max: 1, onnotice: () => undefined })
  const name = new URL(db.url).pathname.slice(1)
  t.teardown(async () => {
    await admin.unsafe(`alter database ${name} with allow_connections true`)
    await instance.close()
    await admin.end()
    await db.dispose()
  })
  t.equal((await health(instance)).status, 200)
  await admin.unsafe(`alter database ${name} with allow_connections false`)
  await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${name}`
  const down = await health(instance)
  t.equal(down.status, 503)
  t.equal(down.body.code, 'database_unavailable')
  t.equal(down.body.parts.storage.status, 'degraded')
  t.ok(down.body.parts.storage.reason, 'with a reason')
  await admin.unsafe(`alter database ${name} with allow_connections true`)
  // postgres.js reconnects with its own backoff: wait for it (the file's timeout bounds the wait).
  let back = await health(instance)
  while (back.status !== 200) {
    await new Promise((r) => setTimeout(r, 100))
    back = await health(instance)
  }
  t.same(back.body.parts.storage, { status: 'ok' }, 'healthy again once the database accepts connections')
})
