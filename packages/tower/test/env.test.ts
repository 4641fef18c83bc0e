import { Writable } from 'node:stream'
import t from 'tap'
import { createTower, startTowerFromEnv } from '@slaw/tower'
import { ADMIN_KEY, backends, enrollBody, forEachBackend, freshDatabase, heartbeatBody, identity } from './helpers/tower.js'

t.test('startTowerFromEnv: PORT, HOST, data dir; a generated admin key is printed once', async (t) => {
  const printed: string[] = []
  const tower = await startTowerFromEnv({ PORT: '0', HOST: '127.0.0.1', SVC_TOWER_DATA_DIR: 'memory://' }, { logger: false, print: (line) => printed.push(line) })
  t.teardown(() => tower.close())
  t.match(tower.address, /^http:\/\/127\.0\.0\.1:\d+$/)
  t.match(tower.generatedAdminKey, /^slaw_admin_/)
  t.equal(printed.filter((line) => line.includes(tower.generatedAdminKey!)).length, 1)
  const res = await fetch(`${tower.address}/api/admin/instances`, { headers: { authorization: `Bearer ${tower.generatedAdminKey}` } })
  t.equal(res.status, 200)
  t.equal((await fetch(`${tower.address}/api/health`)).status, 200)
})

t.test('startTowerFromEnv: the given admin key and enrollment secret', async (t) => {
  const printed: string[] = []
  const tower = await startTowerFromEnv(
    { PORT: '0', SVC_TOWER_DATA_DIR: 'memory://', SVC_TOWER_ADMIN_KEY: ADMIN_KEY, SVC_TOWER_ENROLLMENT_SECRET: 'env-secret-1' },
    { logger: false, print: (line) => printed.push(line) },
  )
  t.teardown(() => tower.close())
  t.equal(tower.generatedAdminKey, null)
  t.same(printed, [])
  const enroll = await fetch(`${tower.address}/api/ingest/v1/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(enrollBody(identity())) })
  t.equal(enroll.status, 401)
  await t.rejects(startTowerFromEnv({ PORT: 'eighty', SVC_TOWER_DATA_DIR: 'memory://' }, { logger: false }), /PORT/)
})

t.test('createTower refuses a missing admin key', async (t) => {
  await t.rejects(createTower({ adminKey: '' }), /adminKey/)
})

t.test('no key or secret in the logs', async (t) => {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(chunk.toString())
      done()
    },
  })
  const tower = await createTower({ dataDir: 'memory://', adminKey: ADMIN_KEY, autoApprove: true, enrollmentSecret: 'log-secret-77', logger: { level: 'trace', stream } })
  t.teardown(() => tower.close())
  const base = await tower.listen({ port: 0 })
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}/api/ingest/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  const enrolled = (await (await post('/enroll', enrollBody(identity()), { 'x-enrollment-secret': 'log-secret-77' })).json()) as { apiKey: string }
  await post('/heartbeat', heartbeatBody(), { authorization: `Bearer ${enrolled.apiKey}` })
  await post('/heartbeat', { nonsense: true }, { authorization: `Bearer ${enrolled.apiKey}` })
  await post('/enroll', enrollBody(identity(), { enrollmentSecret: 'wrong-secret-88' }))
  await fetch(`${base}/api/admin/instances`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
  await tower.close()
  const all = lines.join('')
  t.ok(lines.length > 5, 'something was logged')
  for (const secret of [enrolled.apiKey, ADMIN_KEY, 'log-secret-77', 'wrong-secret-88']) t.notOk(all.includes(secret), 'no secret in the logs')
})

t.test('two tower nodes migrating one PostgreSQL database at once', backends[1]!.skip ? { skip: backends[1]!.skip } : {}, async (t) => {
  const databaseUrl = await freshDatabase(t)
  const [a, b] = await Promise.all([createTower({ databaseUrl, adminKey: ADMIN_KEY, autoApprove: true }), createTower({ databaseUrl, adminKey: ADMIN_KEY, autoApprove: true })])
  t.teardown(() => Promise.all([a.close(), b.close()]))
  const baseA = await a.listen({ port: 0 })
  const baseB = await b.listen({ port: 0 })
  const enrolled = (await (await fetch(`${baseA}/api/ingest/v1/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(enrollBody(identity())) })).json()) as {
    apiKey: string
  }
  const hb = await fetch(`${baseB}/api/ingest/v1/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${enrolled.apiKey}` },
    body: JSON.stringify(heartbeatBody()),
  })
  t.equal(hb.status, 200, 'a key minted by one node works on the other')
})

// The tower's clock is fake here: the gaps are exactly what the test says, however loaded the machine.
let clock = Date.UTC(2026, 0, 15, 12, 0, 0)
forEachBackend(t, { autoApprove: true, now: () => new Date(clock) }, async (t, h) => {
  t.test('the heartbeat interval is learnt from the gaps', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    const interval = async () => (await h.admin('GET', `/instances/${instancePk}`)).body.heartbeatIntervalSec as number
    const advance = async (seconds: number) => {
      clock += seconds * 1000
    }
    await h.ingest('/heartbeat', heartbeatBody(), apiKey)
    t.equal(await interval(), 60, 'default')
    await advance(30)
    await h.ingest('/heartbeat', heartbeatBody(), apiKey)
    t.equal(await interval(), 30, 'a shorter gap is adopted')
    await advance(600)
    await h.ingest('/heartbeat', heartbeatBody(), apiKey)
    t.equal(await interval(), 60, 'a long gap at most doubles it')
    await advance(1)
    await h.ingest('/heartbeat', heartbeatBody(), apiKey)
    t.equal(await interval(), 60, 'a burst changes nothing')
  })
})
