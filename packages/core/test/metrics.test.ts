import t from 'tap'
import { createInstance, type AgentAdapter, type TowerClient, type TowerStatus } from '@slaw/core'
import { towerClient } from '@slaw/tower-client'
import { pgStorage } from '@slaw/storage-pg'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { eachBackend, makeApi, operatorToken, testAdapters, testMasterKey } from './helpers/instance.js'
import { freshDatabase, testDatabaseUrl } from './helpers/backends.js'
import { addAgent } from './helpers/fixtures.js'
import { runHarness, steeredAdapter } from './helpers/runs.js'

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

/** The value of a sample; undefined when there is none (a missing sample is not 0). */
function sample(m: Map<string, number>, key: string): number | undefined {
  return m.get(key)
}

// GET /api/tower's source, as a tower client that last synced 42 s ago with 7 rows unacknowledged.
function towerThatSynced(): TowerClient {
  const lastSyncAt = new Date(Date.now() - 42_000)
  return {
    name: 'fake-tower',
    async start() {},
    async close() {},
    async status() {
      return {
        state: 'connected',
        mode: 'enforce',
        towerUrl: 'https://tower.invalid',
        enrollmentState: 'active',
        gated: false,
        instanceId: null,
        machineId: null,
        leader: true,
        lastHeartbeatAt: lastSyncAt,
        lastSyncAt,
        spoolDepth: 7,
        oldestUnsentAt: null,
        appliedLimitVersion: null,
        appliedSkillCatalogVersion: null,
        limit: null,
        lastError: null,
      } as TowerStatus
    },
  } as TowerClient
}

const h = runHarness()
eachBackend(
  t,
  'domain figures: runs by status and adapter, durations, refused and deferred wakes, runs in flight, month spend, approvals, tower lag',
  async (t, api) => {
    h.reset()
    const scrape = async () => {
      const res = await api.instance.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${operatorToken}` } })
      t.equal(res.statusCode, 200)
      return samples(res.body)
    }
    const s = await h.squadWithAgent(api, 'ada')
    const squad = (await api.call('GET', `/api/squads/${s.squadId}`)).body.squad
    const wake = (agentId: string, body: Record<string, unknown> = {}) => api.call('POST', `/api/agents/${agentId}/wake`, body)

    // Nothing yet: the refusal reasons are there at 0, nothing finished, nothing in flight.
    let m = await scrape()
    t.equal(sample(m, 'slaw_wakes_refused_total{reason="budget"}'), 0, 'refusal reasons start at 0')
    t.equal(sample(m, 'slaw_wakes_queued_total{reason="manual"}'), 0, 'queued wakes start at 0')
    t.equal(sample(m, 'slaw_wakes_queued_total{reason="assignment"}'), 0)
    t.equal(sample(m, 'slaw_run_starts_deferred_total{reason="concurrency_cap"}'), 0)
    t.notOk(
      [...m.keys()].some((k) => k.startsWith('slaw_runs_in_flight{')),
      'no run in flight',
    )

    // A run that takes 90 s (the instance clock) and succeeds, one that fails at once.
    h.adapter.next = async () => {
      h.clock.advance(90_000)
      return { status: 'succeeded', exitCode: 0, output: 'ok\n' }
    }
    t.equal((await wake(s.agentId)).status, 202)
    await h.drain(api)
    h.adapter.next = async () => ({ status: 'failed', exitCode: 1, error: 'boom' })
    await wake(s.agentId)
    await h.drain(api)

    // Refused: a manual wake of a paused agent (409), and a queued run whose agent was paused before it started.
    const paused = await addAgent(api, s.squadId, 'paul')
    await api.call('POST', `/api/agents/${paused.id}/pause`)
    t.equal((await wake(paused.id)).status, 409, 'a paused agent is not woken')
    const late = await addAgent(api, s.squadId, 'lena')
    await wake(late.id)
    await api.call('POST', `/api/agents/${late.id}/pause`)
    await h.drain(api)

    // An http agent whose run stays running (accepted), and a second wake of it for another issue:
    // over the per-agent cap of 1, its start is postponed and it stays queued.
    const web = await addAgent(api, s.squadId, 'webb', { adapterType: 'http' })
    h.httpish.next = async () => ({ status: 'accepted' })
    await wake(web.id)
    await h.drain(api)
    const issue = (await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'later' })).body.issue
    t.equal((await wake(web.id, { issueId: issue.id })).status, 202)
    await h.drain(api)
    // A process run queued and not yet taken up.
    await wake(s.agentId)

    // Spend this month: a priced event and an unpriced one; another squad spends less (maxSquads is 1).
    await api.call('POST', `/api/squads/${s.squadId}/cost-events`, {
      agentId: s.agentId,
      model: 'gpt-5',
      inputTokens: 100,
      outputTokens: 40,
      cachedInputTokens: 20,
      cacheWriteTokens: 5,
      costCents: 250,
    })
    await api.call('POST', `/api/squads/${s.squadId}/cost-events`, { agentId: s.agentId, model: 'gpt-5', inputTokens: 10, outputTokens: 5, costCents: 0, costStatus: 'unpriced' })
    const other = await h.squadWithAgent(api, 'otto')
    await api.call('POST', `/api/squads/${other.squadId}/cost-events`, { agentId: other.agentId, model: 'gpt-5', inputTokens: 1, outputTokens: 1, costCents: 3 })
    // Pending approvals: two in the first squad, one in the other (left out: maxSquads is 1).
    for (const [sq, agent] of [
      [s.squadId, s.agentId],
      [s.squadId, s.agentId],
      [other.squadId, other.agentId],
    ] as const) {
      t.equal((await api.call('POST', `/api/squads/${sq}/approvals`, { type: 'request_board_approval', requestedByAgentId: agent, payload: { title: 'a', summary: 'b' } })).status, 201)
    }

    m = await scrape()
    t.equal(sample(m, 'slaw_runs_finished_total{status="succeeded",adapter="process"}'), 1, 'succeeded runs by adapter')
    t.equal(sample(m, 'slaw_runs_finished_total{status="failed",adapter="process"}'), 1, 'failed runs')
    t.equal(sample(m, 'slaw_runs_finished_total{status="cancelled",adapter="process"}'), 1, 'the run refused at start ends cancelled')
    t.notOk(m.has('slaw_runs_finished_total{status="succeeded",adapter="http"}'), 'the accepted http run has not finished')
    t.equal(sample(m, 'slaw_run_duration_seconds_count{adapter="process"}'), 2, 'durations of runs that started (the cancelled one never did)')
    t.equal(sample(m, 'slaw_run_duration_seconds_sum{adapter="process"}'), 90, 'seconds, on the instance clock')
    t.equal(sample(m, 'slaw_run_duration_seconds_bucket{le="60",adapter="process"}'), 1)
    t.equal(sample(m, 'slaw_run_duration_seconds_bucket{le="120",adapter="process"}'), 2)
    t.equal(sample(m, 'slaw_wakes_refused_total{reason="agent_paused"}'), 2, 'the 409 and the start a gate refused')
    t.equal(sample(m, 'slaw_wakes_queued_total{reason="manual"}'), 6, 'every manual wake that queued a run, not the one refused with 409')
    t.equal(sample(m, 'slaw_wakes_queued_total{reason="assignment"}'), 0, 'no issue was assigned')
    t.equal(sample(m, 'slaw_wakes_refused_total{reason="budget"}'), 0)
    t.equal(sample(m, 'slaw_run_starts_deferred_total{reason="concurrency_cap"}'), 1, 'the second http run waited for a slot')
    t.equal(sample(m, 'slaw_runs_in_flight{status="running",adapter="http"}'), 1, 'in flight: the accepted run')
    t.equal(sample(m, 'slaw_runs_in_flight{status="queued",adapter="http"}'), 1, 'in flight: the run over the cap')
    t.equal(sample(m, 'slaw_runs_in_flight{status="queued",adapter="process"}'), 1, 'in flight: the run not yet taken up')
    t.notOk(m.has('slaw_runs_in_flight{status="running",adapter="process"}'))
    const sq = `squad="${s.squadId}",squad_name="${squad.name}"`
    t.equal(sample(m, `slaw_squad_month_spend_cents{${sq}}`), 250, 'month spend in cents')
    t.equal(sample(m, `slaw_squad_month_tokens{${sq},kind="input"}`), 110)
    t.equal(sample(m, `slaw_squad_month_tokens{${sq},kind="output"}`), 45)
    t.equal(sample(m, `slaw_squad_month_tokens{${sq},kind="cached_input"}`), 20)
    t.equal(sample(m, `slaw_squad_month_tokens{${sq},kind="cache_write"}`), 5)
    t.equal(sample(m, `slaw_squad_month_unpriced_tokens{${sq}}`), 15, 'unpriced tokens apart')
    t.equal(sample(m, `slaw_squad_pending_approvals{${sq}}`), 2, 'pending approvals by squad')
    t.notOk(res(m).includes(other.squadId), 'maxSquads 1: the smaller squad is left out')
    t.equal(sample(m, 'slaw_metrics_squads_omitted{figure="spend"}'), 1, 'and counted as left out')
    t.equal(sample(m, 'slaw_metrics_squads_omitted{figure="approvals"}'), 1)
    t.equal(sample(m, 'slaw_outbox_depth'), 7, 'outbox rows not yet acknowledged')
    const lag = sample(m, 'slaw_tower_sync_lag_seconds') ?? -1
    t.ok(lag >= 42 && lag < 120, `tower sync lag in seconds (${lag})`)
    t.equal(sample(m, 'slaw_tower_state{state="connected"}'), 1)

    // Figures read from storage follow it: the approvals decided, the squad is gone from the list.
    const approvals = (await api.call('GET', `/api/squads/${s.squadId}/approvals?status=pending`)).body.approvals as Array<{ id: string }>
    for (const a of approvals) await api.call('POST', `/api/approvals/${a.id}/reject`, { decisionNote: 'no' })
    m = await scrape()
    t.notOk(m.has(`slaw_squad_pending_approvals{${sq}}`), 'no pending approval: no sample')
    t.equal(
      sample(m, `slaw_squad_pending_approvals{squad="${other.squadId}",squad_name="${(await api.call('GET', `/api/squads/${other.squadId}`)).body.squad.name}"}`),
      1,
      'the other squad moves into the list',
    )

    // Budget hard stops: an agent whose month budget is spent (the budget paused it), and a squad
    // whose month budget is spent (the checkout guard).
    const spender = await addAgent(api, other.squadId, 'bud')
    await api.call('PATCH', `/api/agents/${spender.id}/budgets`, { budgetMonthlyCents: 10 })
    await api.call('POST', `/api/squads/${other.squadId}/cost-events`, { agentId: spender.id, model: 'gpt-5', inputTokens: 1, outputTokens: 1, costCents: 10 })
    t.equal((await wake(spender.id)).status, 409, 'the agent the budget paused is not woken')
    await api.call('PATCH', `/api/squads/${other.squadId}/budgets`, { budgetMonthlyCents: 13, budgetHardStop: true })
    t.equal((await wake(other.agentId)).body.code, 'budget_exhausted', 'the squad budget is spent')
    m = await scrape()
    t.equal(sample(m, 'slaw_wakes_refused_total{reason="budget"}'), 2, 'both refused for the budget')
    t.equal(sample(m, 'slaw_wakes_refused_total{reason="agent_paused"}'), 2, 'a paused agent is counted apart')
  },
  () => ({ ...h.manual, tower: towerThatSynced(), metrics: { maxSquads: 1 } }),
)

/** Every sample name and labels of a scrape, one a line. */
function res(m: Map<string, number>): string {
  return [...m.keys()].join('\n')
}

// Several nodes: a counter is counted by the node that saw the event (Prometheus sums the nodes);
// a figure read from storage is the same on every node (take one node's value, never the sum).
t.test('two nodes on one PostgreSQL database: counters per node, storage figures instance-wide', { skip: testDatabaseUrl ? false : 'set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const db = await freshDatabase({ migrated: true })
  const adapterA = steeredAdapter('process')
  const adapterB = steeredAdapter('process')
  const make = (adapter: AgentAdapter) =>
    createInstance({ storage: pgStorage({ url: db.url, max: 4 }), operatorKey: operatorToken, masterKey: testMasterKey, adapters: [adapter], logger: false, jobs: false })
  const a = await makeApi(await make(adapterA), 'postgres')
  const b = await makeApi(await make(adapterB), 'postgres')
  t.teardown(async () => {
    await a.instance.close()
    await b.instance.close()
    await db.dispose()
  })
  const scrape = async (api: typeof a) => samples((await api.instance.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${operatorToken}` } })).body)
  const s = await a.seed('Nodes')
  const squadName = (await a.call('GET', `/api/squads/${s.squadId}`)).body.squad.name

  // A run woken on B, carried and finished by A's job runner.
  t.equal((await b.call('POST', `/api/agents/${s.agentId}/wake`, {})).status, 202)
  await a.instance.jobs.drain()
  t.equal(adapterA.calls.length, 1, 'node A ran it')
  // A wake refused on B; one queued on A and left there; a cost event and an approval.
  const paused = await addAgent(a, s.squadId, 'paul')
  await a.call('POST', `/api/agents/${paused.id}/pause`)
  t.equal((await b.call('POST', `/api/agents/${paused.id}/wake`, {})).status, 409)
  const waiting = await addAgent(a, s.squadId, 'wanda')
  await a.call('POST', `/api/agents/${waiting.id}/wake`, {})
  await b.call('POST', `/api/squads/${s.squadId}/cost-events`, { agentId: s.agentId, model: 'gpt-5', inputTokens: 3, outputTokens: 2, costCents: 42 })
  await b.call('POST', `/api/squads/${s.squadId}/approvals`, { type: 'request_board_approval', requestedByAgentId: s.agentId, payload: { title: 'a', summary: 'b' } })

  const [ma, mb] = [await scrape(a), await scrape(b)]
  t.equal(ma.get('slaw_runs_finished_total{status="succeeded",adapter="process"}'), 1, 'A finished the run')
  t.notOk(mb.has('slaw_runs_finished_total{status="succeeded",adapter="process"}'), 'B did not: the sum over nodes is 1')
  t.equal(ma.get('slaw_run_duration_seconds_count{adapter="process"}'), 1)
  t.notOk(mb.has('slaw_run_duration_seconds_count{adapter="process"}'))
  t.equal(ma.get('slaw_wakes_refused_total{reason="agent_paused"}'), 0)
  t.equal(mb.get('slaw_wakes_refused_total{reason="agent_paused"}'), 1, 'B refused the wake: the sum over nodes is 1')
  const sq = `squad="${s.squadId}",squad_name="${squadName}"`
  for (const [node, m] of [
    ['A', ma],
    ['B', mb],
  ] as const) {
    t.equal(m.get('slaw_runs_in_flight{status="queued",adapter="process"}'), 1, `node ${node}: the one queued run of the instance`)
    t.equal(m.get(`slaw_squad_month_spend_cents{${sq}}`), 42, `node ${node}: the instance's month spend`)
    t.equal(m.get(`slaw_squad_month_tokens{${sq},kind="input"}`), 3)
    t.equal(m.get(`slaw_squad_pending_approvals{${sq}}`), 1, `node ${node}: the instance's pending approvals`)
  }
})
