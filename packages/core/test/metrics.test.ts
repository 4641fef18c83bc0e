import t from 'tap'
import { createInstance } from '@slaw/core'
import { towerClient } from '@slaw/tower-client'
import { pgStorage } from '@slaw/storage-pg'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { makeApi, operatorToken, testAdapters, testMasterKey } from './helpers/instance.js'
import { freshDatabase, testDatabaseUrl } from './helpers/backends.js'
import { addAgent } from './helpers/fixtures.js'

/** `name{labels} value` lines of a Prometheus text exposition, as a map. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue
    const i = line.lastIndexOf(' ')
    out.set(line.slice(0, i), Number(line.slice(i + 1)))
  }
  return out
}

t.test('GET /metrics on the API port: Operator key, Prometheus text, the figures operators need', async (t) => {
  // A tower client without a tower: everything stays in the outbox, unsent.
  const instance = await createInstance({ storage: await pgliteStorage({ dataDir: 'memory://' }), operatorKey: operatorToken, adapters: testAdapters, logger: false, tower: towerClient({}) })
  t.teardown(() => instance.close())
  const api = await makeApi(instance, 'pglite')
  const s = await api.seed('Metrics')
  const issue = await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'x', assigneeAgentId: s.agentId })
  t.equal((await api.call('POST', `/api/issues/${issue.body.issue.id}/checkout`, { agentId: s.agentId, expectedStatuses: ['todo'] }, s.agentToken)).status, 200)
  const other = await addAgent(api, s.squadId, 'bob')
  t.equal((await api.call('POST', `/api/issues/${issue.body.issue.id}/checkout`, { agentId: other.id, expectedStatuses: ['todo', 'in_progress'] }, other.token)).status, 409, 'a conflict')

  t.equal((await api.call('GET', '/metrics', undefined, null)).status, 401, 'no key: 401')
  t.equal((await api.call('GET', '/metrics', undefined, s.agentToken)).status, 403, 'an agent key: 403')
  const res = await instance.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${operatorToken}` } })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  const m = samples(res.body)
  t.equal(m.get('slaw_http_requests_total{method="POST",route="/api/squads/:squadId/issues",status="201"}'), 1, 'requests by route template and status')
  t.ok((m.get('slaw_http_request_duration_seconds_count{method="POST",route="/api/issues/:id/checkout",status="409"}') ?? 0) >= 1, 'latency histogram by route and status')
  t.equal(m.get('slaw_checkout_conflicts_total'), 1, 'checkout conflicts')
  t.equal(m.get('slaw_tower_state{state="disconnected"}'), 1, 'tower state')
  t.equal(m.get('slaw_tower_state{state="connected"}'), 0)
  t.ok((m.get('slaw_outbox_depth') ?? 0) > 0, 'outbox depth')
  t.ok(m.has('slaw_outbox_oldest_unsent_age_seconds') && m.get('slaw_outbox_oldest_unsent_age_seconds')! >= 0, 'oldest unsent age')
  t.ok((m.get('slaw_process_resident_memory_bytes') ?? 0) > 0, 'process memory')
  t.notOk(res.body.includes(issue.body.issue.id), 'raw URLs (ids) are never labels')
})

t.test('a separate metrics port, without a key; pool use on PostgreSQL', { skip: testDatabaseUrl ? false : 'set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const db = await freshDatabase()
  const instance = await createInstance({ storage: pgStorage({ url: db.url, max: 4 }), operatorKey: operatorToken, masterKey: testMasterKey, logger: false, metrics: { port: 0 } })
  t.teardown(async () => {
    await instance.close()
    await db.dispose()
  })
  await instance.listen({ port: 0 })
  t.ok(instance.metricsAddress, 'the metrics port is listening')
  const scrape = await fetch(`${instance.metricsAddress}/metrics`)
  t.equal(scrape.status, 200)
  const m = samples(await scrape.text())
  t.equal(m.get('slaw_db_pool_connections{kind="max"}'), 4)
  t.ok(m.has('slaw_db_pool_connections{kind="in_use"}'))
  t.equal((await instance.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${operatorToken}` } })).statusCode, 404, 'not on the API port then')
})
