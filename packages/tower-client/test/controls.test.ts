import t from 'tap'
import { eventually, seed, startInstance, startTower, tempDir } from './helpers/fleet.js'

t.test('Operator tower controls', async (t) => {
  const tower = await startTower(t)

  t.test('a client without a tower: disconnected, never gated, connect, disconnect, remembered across a restart', async (t) => {
    const dir = await tempDir(t, 'controls')
    const first = await startInstance(t, { instanceId: 'controls-1' }, { dataDir: dir })
    let s = await first.status()
    t.equal(s.state, 'disconnected')
    t.equal(s.towerUrl, null)
    t.equal(s.gated, false)
    t.equal((await first.call('GET', '/api/squads')).status, 200, 'no tower, no gate (even in enforce mode)')
    const { squadId } = await seed(first)
    t.equal((await first.call('POST', `/api/squads/${squadId}/skills`, { key: 'local', name: 'Local', markdown: '# local' })).status, 201, 'standalone: local skill authoring')

    const sync = await first.call('POST', '/api/tower/sync')
    t.equal(sync.status, 422, 'sync needs a tower')
    t.equal(sync.body.code, 'invalid_state')
    const bad = await first.call('POST', '/api/tower/connect', { towerUrl: 'ftp://example.com' })
    t.equal(bad.status, 400)
    t.equal(bad.body.code, 'invalid_payload')
    t.equal((await first.call('POST', '/api/tower/connect', { towerUrl: tower.url, extra: 1 })).status, 400, 'strict body')

    const connected = await first.call('POST', '/api/tower/connect', { towerUrl: tower.url })
    t.equal(connected.status, 200)
    t.equal(connected.body.tower.towerUrl, tower.url)
    t.equal(connected.body.tower.mode, 'enforce')
    s = await eventually(
      async () => {
        const s = await first.status()
        return s.state === 'connected' && s
      },
      10_000,
      'connected',
    )
    t.equal(s.gated, false)
    const issues = await eventually(async () => (await tower.synced('controls-1', 'squads')).length === 1, 10_000, 'history sent after connecting')
    t.ok(issues, 'what was created before the connect reaches the tower')
    t.equal((await first.call('POST', `/api/squads/${squadId}/skills`, { key: 'local2', name: 'Local 2', markdown: '# l' })).status, 409, 'enrolled: skills come from the tower')

    const disconnected = await first.call('POST', '/api/tower/disconnect')
    t.equal(disconnected.status, 200)
    t.equal(disconnected.body.tower.state, 'disconnected')
    t.equal((await first.call('POST', `/api/squads/${squadId}/skills`, { key: 'local3', name: 'Local 3', markdown: '# l' })).status, 201, 'standalone again')
    await first.close()

    const second = await startInstance(t, { instanceId: 'controls-1' }, { dataDir: dir })
    t.equal((await second.status()).state, 'disconnected', 'the disconnect is remembered')
    t.equal((await second.call('POST', '/api/tower/connect', { towerUrl: tower.url, mode: 'advisory' })).status, 200)
    s = await eventually(
      async () => {
        const s = await second.status()
        return s.state === 'connected' && s
      },
      10_000,
      'connected again',
    )
    t.equal(s.mode, 'advisory')
    t.equal((await tower.admin('GET', '/instances')).body.items.filter((i: any) => i.instanceId === 'controls-1').length, 1, 'one identity on the tower')
  })

  t.test('only the Operator', async (t) => {
    const inst = await startInstance(t, { instanceId: 'controls-2' })
    const { agentId } = await seed(inst)
    const key = await inst.call('POST', `/api/agents/${agentId}/keys`, { name: 'k' })
    for (const [method, url] of [
      ['GET', '/api/tower'],
      ['POST', '/api/tower/disconnect'],
      ['POST', '/api/tower/re-enroll'],
      ['POST', '/api/tower/sync'],
    ] as const) {
      const res = await inst.call(method, url, undefined, key.body.token)
      t.equal(res.status, 403, `${method} ${url}`)
      t.equal(res.body.code, 'forbidden')
    }
  })
})
