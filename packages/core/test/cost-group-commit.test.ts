import t from 'tap'
import { GroupCommit } from '../src/services/foundation/group-commit.js'
import { outboxRows } from './helpers/governance.js'
import { eachBackend, type TestApi } from './helpers/instance.js'

const cost = (api: TestApi, squadId: string, body: Record<string, unknown>, token?: string) =>
  api.call('POST', `/api/squads/${squadId}/cost-events`, { model: 'gpt-5', inputTokens: 1, outputTokens: 1, ...body }, token)

t.test('GroupCommit: one commit per batch, results in order, a failed batch retried item by item', async (t) => {
  const batches: number[][] = []
  let failNext = false
  const gc = new GroupCommit<number, number>(
    async (items) => {
      batches.push(items)
      if (failNext || items.includes(13)) {
        failNext = false
        throw new Error('batch failed')
      }
      return items.map((n) => (n < 0 ? { status: 'rejected' as const, reason: new Error(`bad ${n}`) } : { status: 'fulfilled' as const, value: n * 10 }))
    },
    async (n) => {
      if (n === 13) throw new Error('alone failed')
      return n * 100
    },
    4,
  )
  // Writes submitted in one event-loop turn go together (at most maxBatch at a time).
  const first = gc.submit(1)
  const rest = [2, -3, 4, 5, 6].map((n) =>
    gc.submit(n).then(
      (v) => ({ ok: v }),
      (e: Error) => ({ err: e.message }),
    ),
  )
  const later = new Promise<unknown>((resolve) => setImmediate(() => resolve(gc.submit(7))))
  t.equal(await first, 10)
  t.same(await Promise.all(rest), [{ ok: 20 }, { err: 'bad -3' }, { ok: 40 }, { ok: 50 }, { ok: 60 }], 'each caller gets its own answer')
  t.equal(await later, 70)
  t.same(
    batches,
    [
      [1, 2, -3, 4],
      [5, 6, 7],
    ],
    "one turn's writes went together, at most maxBatch at a time; what arrived meanwhile went next",
  )

  batches.length = 0
  failNext = true
  const b = [8, 12, 13].map((n) =>
    gc.submit(n).then(
      (v) => ({ ok: v }),
      (e: Error) => ({ err: e.message }),
    ),
  )
  t.same(await Promise.all(b), [{ ok: 800 }, { ok: 1200 }, { err: 'alone failed' }], 'a batch that fails is retried item by item, so one bad write fails alone')
  t.same(batches, [[8, 12, 13]])
  const alone = gc.submit(13)
  await t.rejects(alone, /batch failed/, 'a batch of one that fails: its caller sees the batch error')
})

t.test('GroupCommit with two lanes: a batch starts while the previous one still commits', async (t) => {
  const started: number[][] = []
  let release!: () => void
  const gate = new Promise<void>((r) => (release = r))
  const gc = new GroupCommit<number, number>(
    async (items) => {
      started.push(items)
      if (items.includes(1)) await gate
      return items.map((n) => ({ status: 'fulfilled' as const, value: n }))
    },
    async (n) => n,
    64,
    2,
  )
  const first = gc.submit(1)
  await new Promise((r) => setImmediate(r))
  const second = [gc.submit(2), gc.submit(3)]
  t.same(await Promise.all(second), [2, 3], 'the second lane committed while the first waited')
  t.same(started, [[1], [2, 3]])
  release()
  t.equal(await first, 1)
})

eachBackend(t, 'cost events reported at once share transactions and keep every per-event rule', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const other = await api.seed('Other squad')
  await api.call('PATCH', `/api/agents/${agentId}/budgets`, { budgetMonthlyCents: 100 })

  // 30 events of 10 cents at once (the agent's budget is 100), mixed with events of another squad
  // and with refusals that must fail alone.
  const mine = Array.from({ length: 30 }, () => cost(api, squadId, { agentId, costCents: 10 }, agentToken))
  const theirs = Array.from({ length: 10 }, () => cost(api, other.squadId, { agentId: other.agentId, costCents: 3 }))
  const refused = [cost(api, squadId, { agentId: other.agentId, costCents: 1 }), cost(api, squadId, { agentId, costCents: 1 }, other.agentToken)]
  const results = await Promise.all([...mine, ...theirs, ...refused])
  t.same(
    results.slice(0, 40).map((r) => r.status),
    Array(40).fill(201),
    'every valid event is recorded',
  )
  t.equal(results[40]!.body.code, 'invalid_payload', 'an agent of another squad is refused')
  t.equal(results[41]!.status, 404, "another squad's key sees nothing")
  t.equal(new Set(results.slice(0, 40).map((r) => r.body.costEvent.id)).size, 40, 'distinct events')

  const summary = (await api.call('GET', `/api/squads/${squadId}/costs/summary`)).body.summary
  t.match(summary, { totalCents: 300, events: 30 }, 'the rollup counts each event once')
  t.match((await api.call('GET', `/api/squads/${other.squadId}/costs/summary`)).body.summary, { totalCents: 30, events: 10 })

  const activity = (await api.call('GET', `/api/squads/${squadId}/activity?limit=500`)).body.activity as Array<{ action: string }>
  t.equal(activity.filter((a) => a.action === 'cost.recorded').length, 30, 'one activity entry per event')
  t.same(
    activity
      .filter((a) => a.action.startsWith('budget.'))
      .map((a) => a.action)
      .sort(),
    ['budget.hard_threshold_crossed', 'budget.soft_threshold_crossed'],
    'each threshold is announced once, by the event that crossed it',
  )
  t.equal(activity.filter((a) => a.action === 'agent.paused').length, 1, 'the agent is paused once')
  t.equal((await api.call('GET', `/api/agents/${agentId}`)).body.agent.status, 'paused')
  const facts = (await outboxRows(api)).filter((r) => r.entityType === 'cost_event' && r.payload.squadLocalId === squadId)
  t.equal(facts.length, 30, 'one cost_event fact per event')
})
