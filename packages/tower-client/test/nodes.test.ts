import t from 'tap'
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { pgStorage } from '@slaw/storage-pg'
import { eventually, seed, startInstance, startTower } from './helpers/fleet.js'

const base = process.env.SLAW_TEST_DATABASE_URL

/** Two nodes of one instance share a PostgreSQL database: one reports at a time, the other takes over. */
t.test('two nodes of one instance report once', { skip: base ? false : 'PostgreSQL suite skipped: set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const name = `slaw_t_${randomBytes(6).toString('hex')}`
  const admin = postgres(base!, { max: 1, onnotice: () => undefined })
  await admin.unsafe(`create database ${name}`)
  t.teardown(async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`)
    await admin.end()
  })
  const url = new URL(base!)
  url.pathname = `/${name}`
  const tower = await startTower(t)
  // A 10 s lease: on a busy machine a 3 s one may change hands between the two reads below.
  const a = await startInstance(t, { url: tower.url, leaseMs: 10_000 }, { storage: pgStorage({ url: url.toString(), max: 4 }) })
  await eventually(async () => (await a.status()).state === 'connected', 10_000, 'node a connected')
  const b = await startInstance(t, { url: tower.url, leaseMs: 10_000 }, { storage: pgStorage({ url: url.toString(), max: 4 }) })
  const sa = await a.status()
  const sb = await b.status()
  t.equal(sa.instanceId, sb.instanceId, 'one identity')
  t.equal(sa.machineId, sb.machineId)
  t.equal((await b.call('GET', '/api/squads')).status, 200, 'the second node is not gated: the enrollment is shared')
  await new Promise((r) => setTimeout(r, 500))
  t.same([(await a.status()).leader, (await b.status()).leader], [true, false], 'one node reports: the first, holding the lease')
  t.equal((await tower.admin('GET', '/instances')).body.items.length, 1, 'the tower sees one instance')

  const { squadId } = await seed(b)
  await b.call('POST', `/api/squads/${squadId}/issues`, { title: 'written on node b' })
  t.ok(await eventually(async () => (await tower.synced(sa.instanceId, 'issues')).length === 1, 10_000, 'synced by node a'), 'node a sends what node b wrote')

  await a.close()
  // A clean shutdown releases the lease: node b takes over without waiting for it to run out.
  await eventually(async () => (await b.status()).leader, 5_000, 'node b takes over')
  await b.call('POST', `/api/squads/${squadId}/issues`, { title: 'after the handover' })
  t.ok(await eventually(async () => (await tower.synced(sa.instanceId, 'issues')).length === 2, 10_000, 'synced by node b'), 'node b reports after node a closed')
  t.equal((await tower.admin('GET', '/instances')).body.items.length, 1, 'still one instance')
})
