import t from 'tap'
import { MAX_FACTS, MAX_UPSERTS } from '@slaw/core/ingest'
import { forEachBackend } from './helpers/tower.js'

const at = (offsetMs = 0) => new Date(Date.UTC(2026, 0, 15, 12, 0, 0) + offsetMs).toISOString()

const squad = (localId: string, name = 'Platform', updatedAt = at()) => ({
  type: 'squad',
  localId,
  name,
  status: 'active',
  budgetMonthlyCents: 50_000,
  spentMonthlyCents: 1_200,
  updatedAt,
})
const costEvent = (localId: string) => ({
  type: 'cost_event',
  localId,
  squadLocalId: 'sq-1',
  agentLocalId: 'ag-1',
  provider: 'anthropic',
  billingType: 'metered_api',
  model: 'model-x',
  inputTokens: 1000,
  cachedInputTokens: 0,
  outputTokens: 200,
  costCents: 3,
  occurredAt: at(),
})
const activity = (localId: string, action = 'agent.created') => ({
  type: 'activity_event',
  localId,
  squadLocalId: 'sq-1',
  action,
  entityRef: 'agent:ag-1',
  details: { name: 'Ada', count: 1, ok: true },
  occurredAt: at(),
})
const runEvent = (localId: string) => ({
  type: 'run_event',
  localId,
  agentLocalId: 'ag-1',
  squadLocalId: 'sq-1',
  status: 'succeeded',
  startedAt: at(),
  finishedAt: at(1000),
  inputTokens: 5,
  outputTokens: 6,
  occurredAt: at(1000),
})

const batch = (batchCursor: string, upserts: unknown[], facts: unknown[]) => ({ protocolVersion: 1, sentAt: new Date().toISOString(), batchCursor, upserts, facts })

forEachBackend(t, { autoApprove: true }, async (t, h) => {
  t.test('the same batch twice: deduplicated, stored once', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    const body = batch('0000000003', [squad('sq-1')], [costEvent('c-1'), activity('a-1'), runEvent('r-1')])
    const first = await h.ingest('/sync', body, apiKey)
    t.equal(first.status, 200)
    t.same(first.body, { acknowledgedCursor: '0000000003', accepted: { upserts: 1, facts: 3, deduplicated: 0 }, directives: [] })
    const second = await h.ingest('/sync', body, apiKey)
    t.same(second.body, { acknowledgedCursor: '0000000003', accepted: { upserts: 1, facts: 0, deduplicated: 3 }, directives: [] })
    const facts = await h.tower.db.selectFrom('tower_facts').select('local_id').where('instance_pk', '=', instancePk).execute()
    t.equal(facts.length, 3)
    const entities = await h.tower.db.selectFrom('tower_entities').select('local_id').where('instance_pk', '=', instancePk).execute()
    t.equal(entities.length, 1)
  })

  t.test('a batch resent after a lost ack, then the next one', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    const b1 = batch('0000000010', [squad('sq-1')], [costEvent('c-1'), costEvent('c-2')])
    t.equal((await h.ingest('/sync', b1, apiKey)).status, 200) // the ack is "lost"
    // The instance did not advance its cursor: it resends b1's rows, with new ones, in a bigger batch.
    const b2 = batch('0000000012', [squad('sq-1')], [costEvent('c-1'), costEvent('c-2'), costEvent('c-3')])
    const res = await h.ingest('/sync', b2, apiKey)
    t.same(res.body.accepted, { upserts: 1, facts: 1, deduplicated: 2 })
    t.equal(res.body.acknowledgedCursor, '0000000012')
    // A late duplicate of the older batch is acknowledged as what it is; the stored cursor does not move back.
    const late = await h.ingest('/sync', b1, apiKey)
    t.equal(late.body.acknowledgedCursor, '0000000010', 'the answer echoes the batch stored')
    t.same(late.body.accepted, { upserts: 1, facts: 0, deduplicated: 2 })
    const stored = async () => (await h.admin('GET', `/instances/${instancePk}`)).body.acknowledgedCursor
    t.equal(await stored(), '0000000012', 'the high-water mark stays')
    // Cursors compare as numbers, whatever their padding.
    t.equal((await h.ingest('/sync', batch('9', [], []), apiKey)).body.acknowledgedCursor, '9')
    t.equal(await stored(), '0000000012')
    t.equal((await h.ingest('/sync', batch('13', [], []), apiKey)).body.acknowledgedCursor, '13')
    t.equal(await stored(), '13')
    const n = await h.tower.db
      .selectFrom('tower_facts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('instance_pk', '=', instancePk)
      .executeTakeFirstOrThrow()
    t.equal(Number(n.n), 3)
  })

  t.test('a fact re-sent with changed values replaces the stored one', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    const first = await h.ingest('/sync', batch('1', [], [costEvent('fix-1'), costEvent('fix-2')]), apiKey)
    t.same(first.body.accepted, { upserts: 0, facts: 2, deduplicated: 0 })
    const corrected = { ...costEvent('fix-1'), costCents: 40, biller: 'openrouter' }
    const second = await h.ingest('/sync', batch('2', [], [corrected, costEvent('fix-2')]), apiKey)
    t.same(second.body.accepted, { upserts: 0, facts: 1, deduplicated: 1 }, 'the correction is stored, the unchanged one deduplicated')
    const costs = await h.admin('GET', `/instances/${instancePk}/cost-events?limit=10`)
    const byId = new Map(costs.body.items.map((i: { data: { localId: string } }) => [i.data.localId, i.data]))
    t.equal(costs.body.items.length, 2, 'still one row per fact')
    t.match(byId.get('fix-1'), { costCents: 40, biller: 'openrouter' })
    const total = costs.body.items.reduce((n: number, i: { data: { costCents: number } }) => n + i.data.costCents, 0)
    t.equal(total, 43, 'what is summed from the facts follows the correction')
    const otherType = await h.ingest('/sync', batch('3', [], [{ ...activity('fix-1') }]), apiKey)
    t.same(otherType.body.accepted, { upserts: 0, facts: 0, deduplicated: 1 }, 'another type under the same localId does not replace it')
    const twiceInOne = await h.ingest('/sync', batch('4', [], [costEvent('fix-3'), { ...costEvent('fix-3'), costCents: 9 }]), apiKey)
    t.equal(twiceInOne.status, 200, 'the same localId twice in one batch is stored once')
  })

  t.test('overlapping batches in flight at once store each fact once', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    const ids = Array.from({ length: 300 }, (_, i) => `c-${i}`)
    // Half the batches list the same facts forwards, half backwards.
    const shuffled = (seed: number) => (seed % 2 ? [...ids] : [...ids].reverse())
    const squads = (seed: number) => Array.from({ length: 50 }, (_, i) => squad(`sq-${seed % 2 ? i : 49 - i}`, `n${seed}`, at(seed)))
    const replies = await Promise.all([1, 2, 3, 4, 5, 6].map((seed) => h.ingest('/sync', batch(String(seed), squads(seed), shuffled(seed).map(costEvent)), apiKey)))
    t.same(
      replies.map((r) => r.status),
      [200, 200, 200, 200, 200, 200],
    )
    t.equal(
      replies.reduce((n, r) => n + r.body.accepted.facts, 0),
      ids.length,
      'each fact stored by exactly one batch',
    )
    t.equal(
      replies.reduce((n, r) => n + r.body.accepted.facts + r.body.accepted.deduplicated, 0),
      ids.length * 6,
    )
    const page = await h.admin('GET', `/instances/${instancePk}/squads?limit=500`)
    t.equal(page.body.items.length, 50)
    t.ok(
      page.body.items.every((i: { data: { name: string } }) => i.data.name === 'n6'),
      'the newest updatedAt won everywhere',
    )
    t.equal((await h.admin('GET', `/instances/${instancePk}`)).body.acknowledgedCursor, '6')
  })

  t.test('facts of two instances with the same localId are both kept', async (t) => {
    const a = await h.enrolled()
    const b = await h.enrolled()
    t.equal((await h.ingest('/sync', batch('1', [], [costEvent('shared-id')]), a.apiKey)).body.accepted.facts, 1)
    t.equal((await h.ingest('/sync', batch('1', [], [costEvent('shared-id')]), b.apiKey)).body.accepted.facts, 1)
  })

  t.test('upserts: the last write by updatedAt wins, in and across batches', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    const inBatch = [squad('sq-9', 'old', at(0)), squad('sq-9', 'newest', at(2000)), squad('sq-9', 'middle', at(1000))]
    t.equal((await h.ingest('/sync', batch('1', inBatch, []), apiKey)).status, 200)
    const stale = await h.ingest('/sync', batch('2', [squad('sq-9', 'stale', at(500))], []), apiKey)
    t.equal(stale.status, 200)
    const page = await h.admin('GET', `/instances/${instancePk}/squads`)
    t.equal(page.body.items.length, 1)
    t.equal(page.body.items[0].data.name, 'newest')
    await h.ingest('/sync', batch('3', [squad('sq-9', 'renamed', at(3000))], []), apiKey)
    t.equal((await h.admin('GET', `/instances/${instancePk}/squads`)).body.items[0].data.name, 'renamed')
  })

  t.test('every entity type and fact kind, read back through the admin API', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    const upserts = [
      squad('sq-1'),
      {
        type: 'agent',
        localId: 'ag-1',
        squadLocalId: 'sq-1',
        name: 'Ada',
        role: 'software_engineer',
        status: 'active',
        adapterType: 'process',
        budgetMonthlyCents: null,
        spentMonthlyCents: 0,
        title: 'Engineer',
        reportsToLocalId: null,
        updatedAt: at(),
      },
      { type: 'squad_skill', localId: 'sk-1', squadLocalId: 'sq-1', key: 'review', name: 'Review', sourceType: 'tower', trustLevel: 'markdown_only', updatedAt: at() },
      { type: 'project', localId: 'pr-1', squadLocalId: 'sq-1', name: 'Website', status: 'active', updatedAt: at() },
      {
        type: 'issue',
        localId: 'is-1',
        squadLocalId: 'sq-1',
        projectLocalId: 'pr-1',
        title: 'Fix the build',
        status: 'todo',
        assigneeAgentLocalId: 'ag-1',
        updatedAt: at(),
        description: 'never stored',
      },
    ]
    const res = await h.ingest('/sync', batch('5', upserts, [costEvent('c-1'), runEvent('r-1'), activity('a-1')]), apiKey)
    t.equal(res.status, 200)
    for (const [path, n] of [
      ['squads', 1],
      ['agents', 1],
      ['squad-skills', 1],
      ['projects', 1],
      ['issues', 1],
      ['cost-events', 1],
      ['run-events', 1],
      ['activity-events', 1],
    ] as const) {
      const page = await h.admin('GET', `/instances/${instancePk}/${path}`)
      t.equal(page.status, 200, path)
      t.equal(page.body.items.length, n, path)
    }
    const issue = (await h.admin('GET', `/instances/${instancePk}/issues`)).body.items[0].data
    t.equal(issue.title, 'Fix the build')
    t.notOk('description' in issue, 'fields outside the protocol are never stored')
    const stored = await h.tower.db.selectFrom('tower_entities').select('data').where('instance_pk', '=', instancePk).where('type', '=', 'issue').executeTakeFirstOrThrow()
    t.notOk('description' in (stored.data as Record<string, unknown>))
    t.same((await h.admin('GET', `/instances/${instancePk}/activity-events`)).body.items[0].data.details, { name: 'Ada', count: 1, ok: true })
  })

  t.test('admin pages are paginated with a cursor', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    await h.ingest(
      '/sync',
      batch(
        '1',
        [],
        Array.from({ length: 7 }, (_, i) => costEvent(`c-${i}`)),
      ),
      apiKey,
    )
    const seen = new Set<string>()
    let cursor: string | null = null
    let pages = 0
    do {
      const page: { body: { items: Array<{ data: { localId: string } }>; nextCursor: string | null } } = await h.admin(
        'GET',
        `/instances/${instancePk}/cost-events?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      )
      for (const item of page.body.items) seen.add(item.data.localId)
      cursor = page.body.nextCursor
      pages += 1
    } while (cursor)
    t.equal(seen.size, 7)
    t.equal(pages, 3)
    t.equal((await h.admin('GET', `/instances/${instancePk}/cost-events?cursor=garbage`)).status, 400)
    t.equal((await h.admin('GET', `/instances/${instancePk}/cost-events?limit=0`)).status, 400)
    t.equal((await h.admin('GET', '/instances/not-a-uuid/cost-events')).status, 404)
    t.equal((await h.admin('GET', '/instances/00000000-0000-4000-8000-000000000000/squads')).status, 404)
  })

  t.test('batch limits: 2000 upserts and 5000 facts pass, one more is 400', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    const upserts = Array.from({ length: MAX_UPSERTS }, (_, i) => squad(`sq-${i}`))
    const facts = Array.from({ length: MAX_FACTS }, (_, i) => costEvent(`c-${i}`))
    const started = Date.now()
    const full = await h.ingest('/sync', batch('100', upserts, facts), apiKey, { gzip: true })
    t.equal(full.status, 200)
    t.same(full.body.accepted, { upserts: MAX_UPSERTS, facts: MAX_FACTS, deduplicated: 0 })
    t.comment(`full batch stored in ${Date.now() - started} ms`)
    const again = await h.ingest('/sync', batch('100', upserts, facts), apiKey, { gzip: true })
    t.same(again.body.accepted, { upserts: MAX_UPSERTS, facts: 0, deduplicated: MAX_FACTS })

    const tooManyUpserts = await h.ingest('/sync', batch('101', [...upserts, squad('one-more')], []), apiKey)
    t.equal(tooManyUpserts.status, 400)
    t.equal(tooManyUpserts.body.code, 'invalid_payload')
    t.match(tooManyUpserts.body.details, [{ path: '/upserts' }])
    const tooManyFacts = await h.ingest('/sync', batch('101', [], [...facts, costEvent('one-more')]), apiKey)
    t.equal(tooManyFacts.status, 400)
    t.match(tooManyFacts.body.details, [{ path: '/facts' }])
    const n = await h.tower.db
      .selectFrom('tower_facts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('instance_pk', '=', instancePk)
      .executeTakeFirstOrThrow()
    t.equal(Number(n.n), MAX_FACTS, 'nothing of a rejected batch is stored')
  })

  t.test('validation: non-whitelisted activity, unknown types, bad values', async (t) => {
    const { apiKey } = await h.enrolled()
    const secret = await h.ingest('/sync', batch('1', [], [activity('a-1', 'secret.created')]), apiKey)
    t.equal(secret.status, 400)
    t.equal(secret.body.code, 'invalid_payload')
    t.match(secret.body.details, [{ path: '/facts/0/action' }])
    const cases: Array<[string, unknown]> = [
      ['unknown upsert type', batch('1', [{ type: 'secret', localId: 'x', updatedAt: at() }], [])],
      ['unknown fact type', batch('1', [], [{ type: 'comment', localId: 'x', occurredAt: at() }])],
      ['string where a number goes', batch('1', [], [{ ...costEvent('c'), costCents: '3' }])],
      ['negative cents', batch('1', [], [{ ...costEvent('c'), costCents: -1 }])],
      ['nested details', batch('1', [], [{ ...activity('a'), details: { nested: { x: 1 } } }])],
      ['localId too long', batch('1', [], [costEvent('x'.repeat(65))])],
      ['bad timestamp', batch('1', [], [{ ...costEvent('c'), occurredAt: 'yesterday' }])],
      ['empty cursor', batch('', [], [])],
      ['missing facts', { protocolVersion: 1, sentAt: at(), batchCursor: '1', upserts: [] }],
      ['a list, not an object', [1, 2, 3]],
    ]
    for (const [name, body] of cases) {
      const res = await h.ingest('/sync', body, apiKey)
      t.equal(res.status, 400, name)
      t.equal(res.body.code, 'invalid_payload', name)
    }
    const outOfRange = await h.ingest('/sync', batch('1', [], [{ ...costEvent('c'), occurredAt: '0000-01-01T00:00:00Z' }]), apiKey)
    t.equal(outOfRange.status, 400, 'a date PostgreSQL cannot hold is bad input, not a 500')
    const nul = await h.ingest('/sync', batch('1', [squad('sq-nul', 'a\u0000b')], []), apiKey)
    t.equal(nul.status, 400, 'a NUL character is bad input, not a 500')
  })

  t.test('manifest asks for a resync of what the tower lacks', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    await h.ingest('/sync', batch('1', [squad('sq-1'), squad('sq-2')], [costEvent('c-1')]), apiKey)
    const inSync = await h.ingest('/manifest', { protocolVersion: 1, sentAt: at(), counts: { squads: 2, agents: 0, projects: 0, issues: 0, costEvents: 1 } }, apiKey)
    t.same(inSync.body, { inSync: true, resyncTypes: [] })
    const behind = await h.ingest('/manifest', { protocolVersion: 1, sentAt: at(), counts: { squads: 3, agents: 1, projects: 0, issues: 0, costEvents: 5 } }, apiKey)
    t.same(behind.body, { inSync: false, resyncTypes: ['squad', 'agent', 'cost_event'] })
    t.ok((await h.admin('GET', `/instances/${instancePk}`)).body.lastManifestAt)
  })
})
