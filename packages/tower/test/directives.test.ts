import t from 'tap'
import { forEachBackend, heartbeatBody } from './helpers/tower.js'

const syncBody = (batchCursor = '1') => ({ protocolVersion: 1, sentAt: new Date().toISOString(), batchCursor, upserts: [], facts: [] })
const limit = { costLimitCents: 100_000, tokenLimit: null, mode: 'hard' }

forEachBackend(t, { autoApprove: true }, async (t, h) => {
  t.test('queued directives arrive in order, once', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    const queued = [{ kind: 'set_sync_interval', seconds: 120 }, { kind: 'request_reconciliation' }, { kind: 'request_live_stream', durationSec: 300 }, { kind: 'stop_live_stream' }]
    for (const directive of queued) {
      const res = await h.admin('POST', `/instances/${instancePk}/directives`, directive)
      t.equal(res.status, 201)
      t.same(res.body.directive, directive)
      t.equal(res.body.deliveredAt, null)
    }
    const hb = await h.ingest('/heartbeat', heartbeatBody(), apiKey)
    t.same(hb.body.directives, queued, 'in the order queued')
    t.same((await h.ingest('/heartbeat', heartbeatBody(), apiKey)).body.directives, [], 'delivered once')

    await h.admin('POST', `/instances/${instancePk}/directives`, { kind: 'request_reconciliation' })
    t.same((await h.ingest('/sync', syncBody(), apiKey)).body.directives, [{ kind: 'request_reconciliation' }], 'sync responses carry them too')

    const listed = await h.admin('GET', `/instances/${instancePk}/directives`)
    t.equal(listed.body.items.length, 5)
    t.ok(listed.body.items.every((d: { deliveredAt: string | null }) => d.deliveredAt !== null))
  })

  t.test('concurrent heartbeat and sync never both carry a directive', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    for (let i = 0; i < 20; i++) await h.admin('POST', `/instances/${instancePk}/directives`, { kind: 'set_sync_interval', seconds: 10 + i })
    const replies = await Promise.all([h.ingest('/heartbeat', heartbeatBody(), apiKey), h.ingest('/sync', syncBody(), apiKey), h.ingest('/heartbeat', heartbeatBody(), apiKey)])
    const seconds = replies.flatMap((r) => r.body.directives.map((d: { seconds: number }) => d.seconds))
    t.equal(seconds.length, 20)
    t.equal(new Set(seconds).size, 20)
  })

  t.test('invalid directives and unknown instances', async (t) => {
    const { instancePk } = await h.enrolled()
    t.equal((await h.admin('POST', `/instances/${instancePk}/directives`, { kind: 'set_sync_interval', seconds: 5 })).status, 400, 'below 10 s')
    t.equal((await h.admin('POST', `/instances/${instancePk}/directives`, { kind: 'set_sync_interval', seconds: 3601 })).status, 400, 'above 1 h')
    t.equal((await h.admin('POST', `/instances/${instancePk}/directives`, { kind: 'set_limits', limit: {} })).status, 400, 'limits go through /limits')
    t.equal((await h.admin('POST', `/instances/${instancePk}/directives`, { kind: 'self_destruct' })).status, 400)
    t.equal((await h.admin('POST', '/instances/nope/directives', { kind: 'request_reconciliation' })).status, 404)
  })

  t.test('set_limits goes out only while the instance is behind', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    const set = await h.admin('PUT', `/instances/${instancePk}/limits`, limit)
    t.equal(set.status, 200)
    t.match(set.body, { ...limit, window: 'calendar_month_utc', warnPercent: 80 })
    const version: number = set.body.version
    t.ok(version >= 1)

    const behind = await h.ingest('/heartbeat', heartbeatBody({ appliedLimitVersion: version - 1 }), apiKey)
    t.same(behind.body.directives, [{ kind: 'set_limits', limit: set.body }])
    const stillBehind = await h.ingest('/heartbeat', heartbeatBody({ appliedLimitVersion: version - 1 }), apiKey)
    t.same(stillBehind.body.directives, [{ kind: 'set_limits', limit: set.body }], 'sent again while not applied')
    const applied = await h.ingest('/heartbeat', heartbeatBody({ appliedLimitVersion: version }), apiKey)
    t.same(applied.body.directives, [], 'not sent once applied')
    t.same((await h.ingest('/sync', syncBody(), apiKey)).body.directives, [])
    t.same((await h.ingest('/heartbeat', heartbeatBody({ appliedLimitVersion: version + 5 }), apiKey)).body.directives, [], 'nor when ahead')

    const effective = await h.admin('GET', `/instances/${instancePk}/limits`)
    t.same(effective.body, { limit: set.body, scope: 'instance' })

    // A newer fleet-wide limit takes over; an older one would not.
    const fleet = await h.admin('PUT', '/limits', { costLimitCents: null, tokenLimit: 5_000_000, mode: 'soft', warnPercent: 90 })
    t.ok(fleet.body.version > version)
    const next = await h.ingest('/heartbeat', heartbeatBody({ appliedLimitVersion: version }), apiKey)
    t.same(next.body.directives, [{ kind: 'set_limits', limit: fleet.body }])
    t.same((await h.admin('GET', `/instances/${instancePk}/limits`)).body.scope, 'fleet')
    t.same((await h.admin('GET', '/limits')).body.limit, fleet.body)
    t.equal((await h.admin('PUT', '/limits', { ...limit, warnPercent: 0 })).status, 400)
    t.equal((await h.admin('PUT', '/limits', { ...limit, mode: 'maybe' })).status, 400)
  })

  t.test('without appliedLimitVersion (an older instance), a limit goes out once', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    const set = await h.admin('PUT', `/instances/${instancePk}/limits`, { ...limit, mode: 'off' })
    t.same((await h.ingest('/heartbeat', heartbeatBody(), apiKey)).body.directives, [{ kind: 'set_limits', limit: set.body }])
    t.same((await h.ingest('/heartbeat', heartbeatBody(), apiKey)).body.directives, [])
    t.same((await h.ingest('/sync', syncBody(), apiKey)).body.directives, [])
  })

  t.test('skills_updated when the catalog advanced beyond what the instance pulled', async (t) => {
    const { apiKey } = await h.enrolled()
    const published = await h.admin('PUT', '/skills/directive-test', { name: 'Directive test', trustLevel: 'markdown_only', markdown: '# hi' })
    t.equal(published.status, 200)
    const catalogVersion: number = published.body.catalogVersion
    const hb = await h.ingest('/heartbeat', heartbeatBody({ appliedSkillCatalogVersion: catalogVersion - 1, appliedLimitVersion: 1_000_000 }), apiKey)
    t.same(hb.body.directives, [{ kind: 'skills_updated', catalogVersion }])
    const current = await h.ingest('/heartbeat', heartbeatBody({ appliedSkillCatalogVersion: catalogVersion, appliedLimitVersion: 1_000_000 }), apiKey)
    t.same(current.body.directives, [])
  })

  t.test('a directive for every active instance', async (t) => {
    const a = await h.enrolled()
    const b = await h.enrolled()
    const res = await h.admin('POST', '/directives', { kind: 'request_reconciliation' })
    t.equal(res.status, 201)
    t.ok(res.body.queued >= 2)
    for (const { apiKey } of [a, b]) {
      const hb = await h.ingest('/heartbeat', heartbeatBody({ appliedLimitVersion: 1_000_000, appliedSkillCatalogVersion: 1_000_000 }), apiKey)
      t.same(hb.body.directives, [{ kind: 'request_reconciliation' }])
    }
  })
})
