import t from 'tap'
import { createInstance } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'
import { makeApi, operatorToken, testAdapters, testMasterKey } from './helpers/instance.js'
import { freshDatabase, testDatabaseUrl } from './helpers/backends.js'

// docs/authorization.md: a key revoked on one node stops working on every other node within 2 s
// (the per-node cache of resolved keys). Two nodes on one PostgreSQL database, one shared test
// clock that the test moves: no sleeping.
t.test('a key revoked on node A is refused on node B within the 2 s bound', { skip: testDatabaseUrl ? false : 'set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const db = await freshDatabase()
  let nowMs = Date.parse('2026-01-01T00:00:00.000Z')
  const clock = () => new Date(nowMs)
  const make = () =>
    createInstance({ storage: pgStorage({ url: db.url, max: 3 }), operatorKey: operatorToken, masterKey: testMasterKey, adapters: testAdapters, logger: false, jobs: false, now: clock })
  const a = await makeApi(await make(), 'postgres')
  const b = await makeApi(await make(), 'postgres')
  t.teardown(async () => {
    await a.instance.close()
    await b.instance.close()
    await db.dispose()
  })
  const s = await a.seed('Nodes')
  const keys = await a.call('GET', `/api/agents/${s.agentId}/keys`)
  const keyId = keys.body.keys[0].id as string
  const me = (api: typeof a) => api.call('GET', '/api/agents/me', undefined, s.agentToken)

  t.equal((await me(b)).status, 200, 'node B resolves and caches the key')
  t.equal((await a.call('DELETE', `/api/agents/${s.agentId}/keys/${keyId}`)).status, 200, 'revoked through node A')
  t.equal((await me(a)).status, 401, 'node A refuses it at once')
  t.equal((await me(b)).status, 200, 'node B may still accept it from its cache (this is the bound being tested)')
  nowMs += 1_999
  t.equal((await me(b)).status, 200, 'still inside 2 s')
  nowMs += 2
  t.equal((await me(b)).status, 401, 'node B refuses it once 2 s have passed since it cached the key')
})
