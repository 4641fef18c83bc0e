import t from 'tap'
import { PROTOCOL_VERSION } from '@slaw/core/ingest'
import { eventually, faultProxy, seed, startInstance, startTower } from './helpers/fleet.js'

t.test('protocol versions', async (t) => {
  const tower = await startTower(t)

  t.test('the prior version is still accepted', async (t) => {
    const inst = await startInstance(t, { url: tower.url, instanceId: 'older-ok', protocolVersion: PROTOCOL_VERSION - 1 })
    await eventually(async () => (await inst.status()).state === 'connected', 10_000, 'connected')
    const { squadId } = await seed(inst)
    await inst.call('POST', `/api/squads/${squadId}/issues`, { title: 'from an older instance' })
    t.ok(await eventually(async () => (await tower.synced('older-ok', 'issues')).length === 1, 10_000, 'synced'), 'synced with protocol version 0')
  })

  for (const [name, version, pattern] of [
    ['older than the tower accepts', PROTOCOL_VERSION - 2, /no longer supported/],
    ['newer than the tower understands', PROTOCOL_VERSION + 1, /newer than this tower/],
  ] as const) {
    t.test(`${name}: 426, reported, the instance keeps serving`, async (t) => {
      const proxy = await faultProxy(t, () => tower.url)
      const inst = await startInstance(t, { url: proxy.url, mode: 'advisory', instanceId: `version-${version}`, protocolVersion: version })
      const s = await eventually(
        async () => {
          const s = await inst.status()
          return s.state === 'protocol_unsupported' && s
        },
        10_000,
        'protocol_unsupported',
      )
      t.equal(s.lastError.code, 'protocol_version_unsupported')
      t.match(s.lastError.message, pattern)
      t.equal((await inst.call('GET', '/api/squads')).status, 200, 'the instance keeps serving')
      t.notOk(await tower.instance(`version-${version}`), 'the tower registered nothing')
      // It does not hammer the tower: one retry per longest backoff interval (400 ms here).
      const n = proxy.count('/enroll')
      await new Promise((r) => setTimeout(r, 1000))
      t.ok(proxy.count('/enroll') - n <= 4, `${proxy.count('/enroll') - n} retries in 1 s`)
    })
  }

  t.test('a newer tower: unknown directives and fields are skipped, the known ones applied in order', async (t) => {
    const proxy = await faultProxy(t, () => tower.url)
    const inst = await startInstance(t, { url: proxy.url, instanceId: 'newer-tower' })
    await eventually(async () => (await inst.status()).state === 'connected', 10_000, 'connected')
    proxy.rewrite('/heartbeat', 1, (body) => ({
      ...body,
      futureField: { anything: true },
      directives: [
        { kind: 'set_sync_interval', seconds: 20 },
        { kind: 'rotate_everything', payload: 42 },
        { kind: 'set_limits', limit: { costLimitCents: 100, tokenLimit: null, window: 'calendar_month_utc', warnPercent: 80, mode: 'soft', version: 7 } },
        { kind: 'set_limits', limit: { costLimitCents: 5, tokenLimit: null, window: 'calendar_month_utc', warnPercent: 80, mode: 'hard', version: 3 } },
        { kind: 'set_sync_interval', seconds: 5 },
      ],
    }))
    const state = await eventually(
      async () => {
        const s = (await inst.storage.towerState.getAll()) as any
        return s.limit?.version === 7 && s
      },
      10_000,
      'directives applied',
    )
    t.equal(state.syncIntervalSec, 10, 'the last set_sync_interval wins, clamped to 10 s')
    t.equal(state.limit.costLimitCents, 100, 'a set_limits with a lower version than the applied one is ignored')
    t.equal(state.limit.mode, 'soft')
    const s = await inst.status()
    t.equal(s.appliedLimitVersion, 7)
    t.equal(s.state, 'connected', 'the unknown directive did not break anything')
  })
})
