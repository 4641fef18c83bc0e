import t from 'tap'
import { sql } from 'kysely'
import type { LiveFactEvent } from '@slaw/tower'
import { eventually, seed, startInstance, startTower } from './helpers/fleet.js'

t.test('directives, limits, live channel, privacy, reconciliation and skills', async (t) => {
  const tower = await startTower(t)
  const inst = await startInstance(t, { url: tower.url, instanceId: 'dir-1', liveStream: true, reportIssueTitles: false })
  await eventually(async () => (await inst.status()).state === 'connected', 10_000, 'connected')
  const onTower = await tower.instance('dir-1')
  const { squadId, agentId, prefix } = await seed(inst, 'Directive Squad')
  const queue = async (directive: unknown) => {
    const res = await tower.admin('POST', `/instances/${onTower.id}/directives`, directive)
    if (res.status !== 201) throw new Error(`queue: ${res.status} ${JSON.stringify(res.body)}`)
  }
  const stored = async () => (await inst.storage.towerState.getAll()) as any

  t.test('reportIssueTitles false: titles become identifiers; bodies, comments and prompts never leave', async (t) => {
    t.equal(onTower.capabilities.reportIssueTitles, false, 'the capability was declared at enrollment')
    const issue = await inst.call('POST', `/api/squads/${squadId}/issues`, { title: 'Acquire the competitor quietly', description: 'TOP-SECRET-BODY' })
    t.equal(issue.status, 201)
    await inst.call('POST', `/api/issues/${issue.body.issue.id}/comments`, { body: 'TOP-SECRET-COMMENT' })
    await inst.call('PATCH', `/api/issues/${issue.body.issue.id}`, { title: 'Acquire the competitor very quietly', status: 'blocked' })
    const synced = await eventually(
      async () => {
        const xs = await tower.synced('dir-1', 'issues')
        return xs.find((i) => i.localId === issue.body.issue.id && i.status === 'blocked')
      },
      10_000,
      'the issue on the tower',
    )
    t.equal(synced.title, `${prefix}-1`, 'the identifier instead of the title')
    t.notOk('identifier' in synced, 'no field outside the wire shape')
    const { rows } = await sql<{ data: string }>`select data::text as data from tower_entities union all select data::text from tower_facts`.execute(tower.tower.db)
    const everything = rows.map((r) => r.data).join('\n')
    t.ok(everything.includes(`${prefix}-1`), 'the check reads what the tower stored')
    for (const secret of ['Acquire', 'TOP-SECRET-BODY', 'TOP-SECRET-COMMENT']) t.notOk(everything.includes(secret), `"${secret}" is nowhere on the tower`)
  })

  t.test('directives apply in the order given', async (t) => {
    const live: string[] = []
    const onOpen = () => live.push('open')
    const onClose = () => live.push('close')
    tower.tower.live.on('open', onOpen)
    tower.tower.live.on('close', onClose)
    t.teardown(() => {
      tower.tower.live.off('open', onOpen)
      tower.tower.live.off('close', onClose)
    })
    const manifestBefore = onTower.lastManifestAt
    await queue({ kind: 'request_live_stream', durationSec: 30 })
    await queue({ kind: 'set_sync_interval', seconds: 45 })
    await queue({ kind: 'stop_live_stream' })
    await queue({ kind: 'set_sync_interval', seconds: 15 })
    await queue({ kind: 'request_reconciliation' })
    await eventually(async () => (await stored()).syncIntervalSec === 15, 10_000, 'sync interval')
    const after = await eventually(
      async () => {
        const i = await tower.instance('dir-1')
        return i.lastManifestAt && i.lastManifestAt !== manifestBefore && i
      },
      10_000,
      'a manifest after request_reconciliation',
    )
    t.ok(after.lastManifestAt, 'reconciliation ran')
    await new Promise((r) => setTimeout(r, 500))
    t.same(tower.tower.live.connected(), [], 'the live stream opened then stopped leaves no channel open')
    t.equal((await stored()).syncIntervalSec, 15, 'the later set_sync_interval wins')
  })

  t.test('live stream: open on request, facts as they happen, closed on stop', async (t) => {
    const facts: LiveFactEvent[] = []
    const onFact = (e: LiveFactEvent) => facts.push(e)
    tower.tower.live.on('fact', onFact)
    t.teardown(() => tower.tower.live.off('fact', onFact))
    // Slow sync (15 s from the previous test): a fact arriving now came over the live channel.
    await queue({ kind: 'stop_live_stream' })
    await queue({ kind: 'request_live_stream', durationSec: 30 })
    await eventually(async () => tower.tower.live.connected().includes(onTower.id), 10_000, 'live channel open')
    const cost = await inst.call('POST', `/api/squads/${squadId}/cost-events`, { agentId, model: 'live-model', inputTokens: 1, outputTokens: 1, costCents: 1 })
    t.equal(cost.status, 201)
    const fact = await eventually(async () => facts.find((f) => f.event.localId === cost.body.costEvent.id), 10_000, 'the fact over the live channel')
    t.equal(fact.event.type, 'cost_event')
    t.equal(fact.stored, true, 'stored by the live channel before the next sync')
    await queue({ kind: 'stop_live_stream' })
    await eventually(async () => !tower.tower.live.connected().includes(onTower.id), 10_000, 'live channel closed')
    t.pass('closed on stop_live_stream')
    // Sync later sends the same fact: deduplicated, still one on the tower.
    t.equal((await inst.call('POST', '/api/tower/sync')).status, 200)
    const costs = (await tower.synced('dir-1', 'cost-events')).filter((c) => c.localId === cost.body.costEvent.id)
    t.equal(costs.length, 1, 'once on the tower')
  })

  t.test('live stream ends after durationSec', async (t) => {
    await queue({ kind: 'request_live_stream', durationSec: 1 })
    t.ok(await eventually(async () => tower.tower.live.connected().includes(onTower.id), 10_000, 'open'), 'opened')
    t.ok(await eventually(async () => !tower.tower.live.connected().includes(onTower.id), 10_000, 'closed after 1 s'), 'closed by itself')
  })

  t.test('set_limits hard: checkouts answer 409 tower_limit_reached; soft only warns; off clears', async (t) => {
    const issue = await inst.call('POST', `/api/squads/${squadId}/issues`, { title: 'limited' })
    const issueId = issue.body.issue.id
    await inst.call('POST', `/api/squads/${squadId}/cost-events`, { agentId, model: 'm', inputTokens: 10, outputTokens: 10, costCents: 600, billingType: 'metered_api' })
    const limit = await tower.admin('PUT', `/instances/${onTower.id}/limits`, { costLimitCents: 500, tokenLimit: null, mode: 'hard', warnPercent: 50 })
    t.equal(limit.status, 200)
    await eventually(async () => (await inst.status()).appliedLimitVersion === limit.body.version, 10_000, 'limit applied')
    const blocked = await inst.call('POST', `/api/issues/${issueId}/checkout`, { agentId })
    t.equal(blocked.status, 409)
    t.equal(blocked.body.code, 'tower_limit_reached')
    const activity = await eventually(
      async () => {
        const res = await inst.call('GET', `/api/squads/${squadId}/activity?entityType=tower_limit`)
        const actions = res.body.activity.map((a: any) => a.action)
        return actions.includes('tower.limit_warning') && actions.includes('tower.limit_reached') && actions
      },
      10_000,
      'limit activity',
    )
    t.ok(activity, 'the warning and the ceiling are in the activity log')
    t.equal((await inst.call('GET', '/api/squads')).status, 200, 'only new work is blocked')

    const soft = await tower.admin('PUT', `/instances/${onTower.id}/limits`, { costLimitCents: 500, tokenLimit: null, mode: 'soft' })
    await eventually(async () => (await inst.status()).appliedLimitVersion === soft.body.version, 10_000, 'soft limit applied')
    const ok = await inst.call('POST', `/api/issues/${issueId}/checkout`, { agentId })
    t.equal(ok.status, 200, 'soft mode warns only')
    await inst.call('POST', `/api/issues/${issueId}/release`, { agentId })

    const tokens = await tower.admin('PUT', `/instances/${onTower.id}/limits`, { costLimitCents: null, tokenLimit: 1_000_000, mode: 'hard' })
    await eventually(async () => (await inst.status()).appliedLimitVersion === tokens.body.version, 10_000, 'token limit applied')
    t.equal((await inst.call('POST', `/api/issues/${issueId}/checkout`, { agentId, expectedStatuses: ['in_progress'] })).status, 200, 'metered spend does not count against a token ceiling')
    await inst.call('POST', `/api/issues/${issueId}/release`, { agentId })

    const off = await tower.admin('PUT', `/instances/${onTower.id}/limits`, { costLimitCents: 1, tokenLimit: null, mode: 'off' })
    await eventually(async () => (await inst.status()).appliedLimitVersion === off.body.version, 10_000, 'off applied')
    t.equal((await inst.call('POST', `/api/issues/${issueId}/checkout`, { agentId, expectedStatuses: ['in_progress'] })).status, 200, 'off clears the limit')
  })

  t.test('reconciliation: types the tower lacks are resynced in full', async (t) => {
    // The sync interval is 15 s since the directives test: sync now.
    t.equal((await inst.call('POST', '/api/tower/sync')).status, 200)
    const before = (await tower.synced('dir-1', 'issues')).length
    t.ok(before >= 2)
    // The tower loses its issues (a restore from an old backup).
    await sql`delete from tower_entities where type = 'issue'`.execute(tower.tower.db)
    await queue({ kind: 'request_reconciliation' })
    const back = await eventually(
      async () => {
        const xs = await tower.synced('dir-1', 'issues')
        return xs.length === before && xs
      },
      10_000,
      'issues resynced',
    )
    t.ok(
      back.every((i) => /^[A-Z]+-\d+$/.test(i.title)),
      'resynced titles follow reportIssueTitles too',
    )
    t.same((await stored()).resync ?? {}, {}, 'no resync left queued')
  })

  t.test('skills: the catalog is pulled on skills_updated, installed through the tower controls, authoring is refused', async (t) => {
    const published = await tower.admin('PUT', '/skills/code-review', { name: 'Code review', markdown: '# Review\nLook closely.', trustLevel: 'verified' })
    t.equal(published.status, 200, JSON.stringify(published.body))
    await eventually(async () => (await inst.status()).appliedSkillCatalogVersion === published.body.catalogVersion, 10_000, 'catalog applied')
    const installed = await inst.call('POST', '/api/tower/skills/code-review/install', { squadId })
    t.equal(installed.status, 200, JSON.stringify(installed.body))
    t.equal(installed.body.skill.key, 'code-review')
    const local = await inst.call('POST', `/api/squads/${squadId}/skills`, { key: 'mine', name: 'Mine', markdown: '# mine' })
    t.equal(local.status, 409)
    t.equal(local.body.code, 'skills_managed_by_tower')
    t.equal((await inst.call('POST', '/api/tower/sync')).status, 200)
    t.ok(await eventually(async () => (await tower.synced('dir-1', 'squad-skills')).some((s) => s.key === 'code-review'), 10_000, 'squad skill synced'), 'the squad skill is synced')
  })
})
