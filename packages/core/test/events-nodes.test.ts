import t from 'tap'
import { compareEventCursors, createInstance } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'
import { redisEventBroker } from '@slaw/lock-redis'
import { makeApi, operatorToken, testAdapters, testMasterKey } from './helpers/instance.js'
import { freshDatabase, testDatabaseUrl, testRedisUrl } from './helpers/backends.js'
import { openSse } from './helpers/sse.js'

// docs/events.md: an event committed on node A reaches a subscriber on node B (PostgreSQL
// LISTEN/NOTIFY wakes B; B reads the events from storage), in commit order, none lost or doubled,
// even when many transactions on both nodes commit out of order; a stream cut mid-way resumes on
// either node with Last-Event-ID.
t.test('events across two nodes on one PostgreSQL database', { skip: testDatabaseUrl ? false : 'set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const db = await freshDatabase({ migrated: true })
  const make = () => createInstance({ storage: pgStorage({ url: db.url, max: 4 }), operatorKey: operatorToken, masterKey: testMasterKey, adapters: testAdapters, logger: false, jobs: false })
  const a = await makeApi(await make(), 'postgres')
  const b = await makeApi(await make(), 'postgres')
  t.teardown(async () => {
    await a.instance.close()
    await b.instance.close()
    await db.dispose()
  })
  const addressA = await a.instance.listen({ port: 0 })
  const addressB = await b.instance.listen({ port: 0 })
  const s = await a.seed('Nodes')
  const other = await a.seed('Other')
  const path = `/api/squads/${s.squadId}/events?types=issue.created`

  const onB = await openSse(addressB, path, s.agentToken)
  const cut = await openSse(addressB, path, operatorToken)
  t.equal(onB.status, 200, 'an agent key streams its squad on node B')
  t.equal((await openSse(addressB, `/api/squads/${other.squadId}/events`, s.agentToken)).status, 404, 'and not another squad')

  // Latency: one write at a time on A, timed until B's subscriber has it.
  const latencies: number[] = []
  for (let i = 0; i < 20; i++) {
    const started = performance.now()
    const created = await a.call('POST', `/api/squads/${s.squadId}/issues`, { title: `timed ${i}` })
    t.equal(created.status, 201)
    const got = await onB.next(i + 1, 5000)
    t.equal(got[i]!.data.entityId, created.body.issue.id)
    latencies.push(performance.now() - started)
  }
  latencies.sort((x, y) => x - y)
  const p99 = latencies[Math.ceil(latencies.length * 0.99) - 1]!
  t.ok(p99 < 1500, `node A -> node B: p50 ${latencies[10]!.toFixed(1)} ms, max ${p99.toFixed(1)} ms (bench/events.mjs measures p99)`)

  // Many writers on both nodes at once: transactions commit out of order.
  const writes = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).call('POST', `/api/squads/${s.squadId}/issues`, { title: `burst ${i}` })))
  t.ok(
    writes.every((w) => w.status === 201),
    '60 issues created on two nodes at once',
  )
  const all = await onB.next(80, 10_000)
  const created = new Set(writes.map((w) => w.body.issue.id as string))
  const streamed = all.slice(20).map((m) => m.data.entityId as string)
  t.equal(new Set(streamed).size, 60, 'no event doubled')
  t.ok(
    streamed.every((id) => created.has(id)),
    'and every one of them streamed',
  )
  t.ok(
    all.every((m, i) => i === 0 || compareEventCursors(all[i - 1]!.id!, m.id!) < 0),
    'in feed order',
  )
  await new Promise((r) => setTimeout(r, 200))
  t.equal(onB.messages.length, 80, 'nothing more')

  // The second stream was cut mid-way (its connection killed); it resumes on node A.
  await cut.next(30)
  const kept = cut.messages.slice(0, 30)
  cut.close()
  const resumed = await openSse(addressA, path, operatorToken, { 'last-event-id': kept[29]!.id! })
  const rest = await resumed.next(50, 10_000)
  const union = [...kept, ...rest].map((m) => m.id!)
  t.same(
    union,
    all.map((m) => m.id!),
    'resumed on the other node: nothing missed or doubled',
  )
  resumed.close()
  onB.close()
})

// With Redis configured, Redis pub/sub wakes the other nodes instead of NOTIFY.
t.test('events across two nodes woken through Redis pub/sub', { skip: testDatabaseUrl && testRedisUrl ? false : 'set SLAW_TEST_DATABASE_URL and SLAW_TEST_REDIS_URL' }, async (t) => {
  const db = await freshDatabase({ migrated: true })
  const channel = `slaw:test:events:${crypto.randomUUID()}`
  // A poll far slower than the test: only the broker can wake node B in time.
  const make = () =>
    createInstance({
      storage: pgStorage({ url: db.url, max: 3 }),
      eventBroker: redisEventBroker({ url: testRedisUrl!, channel }),
      events: { pollMs: 60_000 },
      operatorKey: operatorToken,
      masterKey: testMasterKey,
      adapters: testAdapters,
      logger: false,
      jobs: false,
    })
  const a = await makeApi(await make(), 'postgres')
  const b = await makeApi(await make(), 'postgres')
  t.teardown(async () => {
    await a.instance.close()
    await b.instance.close()
    await db.dispose()
  })
  await a.instance.listen({ port: 0 })
  const addressB = await b.instance.listen({ port: 0 })
  const s = await a.seed('Redis')
  const onB = await openSse(addressB, `/api/squads/${s.squadId}/events?types=issue.created`, operatorToken)
  const made: string[] = []
  for (let i = 0; i < 5; i++) {
    made.push((await a.call('POST', `/api/squads/${s.squadId}/issues`, { title: `r${i}` })).body.issue.id)
    // Generous for a loaded CI machine: the broker is the only wake (the poll is a minute), so a lost one still fails.
    await onB.next(i + 1, 10_000)
  }
  t.same(
    onB.messages.map((m) => m.data.entityId),
    made,
    "node B streams node A's changes, in order",
  )
  onB.close()
})
