import t from 'tap'
import { providerForModel } from '../src/services/money/periods-and-models.js'
import { outboxRows } from './helpers/governance.js'
import { eachBackend } from './helpers/instance.js'

const unknownId = '01a2016d-4579-7b3a-99bd-85bf68260266'

t.test('provider from the model name', async (t) => {
  const table: Array<[string, string]> = [
    ['claude-sonnet-4-5', 'anthropic'],
    ['Claude-3-Opus', 'anthropic'],
    ['gpt-4o-mini', 'openai'],
    ['o3-mini', 'openai'],
    ['codex-mini-latest', 'openai'],
    ['gemini-2.5-pro', 'google'],
    ['mistral-large', 'mistral'],
    ['codestral-2501', 'mistral'],
    ['llama-3.1-70b', 'meta'],
    ['command-r-plus', 'cohere'],
    ['deepseek-chat', 'deepseek'],
    ['grok-4', 'xai'],
    ['qwen2.5-coder', 'alibaba'],
    ['kimi-k2', 'moonshot'],
    ['glm-4.6', 'zhipu'],
    ['openrouter/anthropic-claude', 'openrouter'],
    ['anthropic/claude-3.5-sonnet', 'anthropic'],
    ['my-finetune', 'unknown'],
  ]
  for (const [model, provider] of table) t.equal(providerForModel(model), provider, model)
})

eachBackend(t, 'cost events: recorded in cents and tokens, attributed, reported to the tower', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const project = (await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'P' })).body.project
  const issue = (await api.call('POST', `/api/squads/${squadId}/issues`, { title: 'I', projectId: project.id, billingCode: 'CLIENT-7' })).body.issue

  const res = await api.call('POST', `/api/squads/${squadId}/cost-events`, { agentId, model: 'claude-sonnet-4-5', inputTokens: 1200, outputTokens: 300, costCents: 42, issueId: issue.id }, agentToken)
  t.equal(res.status, 201)
  const e = res.body.costEvent
  // The figures as recorded, with the defaults filled in: the API answers them and the tower gets them.
  const figures = {
    provider: 'anthropic',
    biller: null,
    billingType: 'metered_api',
    model: 'claude-sonnet-4-5',
    inputTokens: 1200,
    cachedInputTokens: 0,
    outputTokens: 300,
    costCents: 42,
  }
  t.match(e, { squadId, agentId, issueId: issue.id, projectId: project.id, ...figures, billingCode: 'CLIENT-7' })
  t.ok(Date.parse(e.occurredAt))

  const explicit = await api.call('POST', `/api/squads/${squadId}/cost-events`, {
    agentId,
    model: 'my-model',
    inputTokens: 10,
    cachedInputTokens: 5,
    outputTokens: 1,
    costCents: 0,
    provider: 'Acme',
    biller: 'openrouter',
    billingType: 'subscription_included',
    billingCode: 'X',
  })
  t.equal(explicit.status, 201, 'an Operator records for any agent of the squad')
  t.match(explicit.body.costEvent, { provider: 'acme', biller: 'openrouter', billingType: 'subscription_included', billingCode: 'X', issueId: null, projectId: null })

  // The tower gets the fact in the wire shape of docs/ingest-protocol.md.
  const facts = (await outboxRows(api)).filter((o) => o.entityType === 'cost_event').map((o) => o.payload)
  t.equal(facts.length, 2)
  t.same(facts[0], {
    type: 'cost_event',
    localId: e.id,
    squadLocalId: squadId,
    agentLocalId: agentId,
    issueLocalId: issue.id,
    projectLocalId: project.id,
    ...figures,
    occurredAt: e.occurredAt,
  })
  t.equal(facts[1]!.biller, 'openrouter')
  // Nullable keys are present with null, never left out (the reference tower requires them).
  t.ok('issueLocalId' in facts[1]! && facts[1]!.issueLocalId === null)
  t.ok('projectLocalId' in facts[1]! && facts[1]!.projectLocalId === null)
  const reported = (await outboxRows(api)).filter((o) => o.entityType === 'activity_event' && o.payload.action === 'cost.reported')
  t.equal(reported.length, 2, 'cost.recorded activity maps to the tower action cost.reported')

  // Activity keeps the figures readable (token counts are not credentials).
  const activity = (await api.call('GET', `/api/squads/${squadId}/activity?entityType=cost_event&entityId=${e.id}`)).body.activity
  t.equal(activity.length, 1)
  t.match(activity[0], { action: 'cost.recorded', agentId, details: { inputTokens: 1200, outputTokens: 300, costCents: 42, identifier: issue.identifier } })
})

eachBackend(t, 'cost events: bad input', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const other = await api.seed()
  const second = (await api.call('POST', `/api/squads/${squadId}/agents`, { name: 'bob', role: 'engineer', adapterType: 'process' })).body.agent
  const base = { agentId, model: 'gpt-4o', inputTokens: 1, outputTokens: 1, costCents: 1 }
  const post = (body: unknown, token?: string) => api.call('POST', `/api/squads/${squadId}/cost-events`, body, token)

  for (const [field, value] of [
    ['costCents', -1],
    ['costCents', 1.5],
    ['costCents', '5'],
    ['inputTokens', -3],
    ['outputTokens', 2.25],
    ['cachedInputTokens', -1],
    ['inputTokens', null],
  ] as const) {
    const r = await post({ ...base, [field]: value })
    t.equal(r.status, 400, `${field}=${JSON.stringify(value)}`)
    t.equal(r.body.code, 'invalid_payload')
    t.ok(
      r.body.details.some((d: { path: string }) => d.path === `/${field}`),
      `${field} named in details`,
    )
  }
  t.equal((await post({ ...base, billingType: 'free' })).status, 400)
  t.equal((await post({ ...base, model: '  ' })).status, 400)
  t.equal((await post({ ...base, extra: true })).status, 400)
  t.equal((await post({ ...base, agentId: 'not-a-uuid' })).status, 400)

  // Ids in a body that name nothing usable answer 400 invalid_payload (path ids answer 404).
  const unknownAgent = await post({ ...base, agentId: unknownId })
  t.equal(unknownAgent.status, 400)
  t.same(unknownAgent.body.details, [{ path: '/agentId', message: 'agentId must be an agent of this squad' }])
  const foreignAgent = await post({ ...base, agentId: other.agentId })
  t.equal(foreignAgent.status, 400, 'an agent of another squad is the same as an unknown one')
  t.same(foreignAgent.body.details, unknownAgent.body.details)
  const foreignIssue = (await api.call('POST', `/api/squads/${other.squadId}/issues`, { title: 'theirs' })).body.issue.id
  t.equal((await post({ ...base, issueId: foreignIssue })).body.details[0].path, '/issueId')

  const forOther = await post({ ...base, agentId: second.id }, agentToken)
  t.equal(forOther.status, 403, 'an agent reports its own costs only')
  t.equal((await post(base, other.agentToken)).status, 404, "another squad's agent does not see this squad")
  t.equal((await api.call('POST', `/api/squads/${unknownId}/cost-events`, base)).status, 404)
  t.equal((await api.call('POST', `/api/squads/nope/cost-events`, base)).status, 404)
  t.equal((await api.call('GET', `/api/squads/${squadId}/costs/summary`)).body.summary.events, 0, 'nothing was recorded')
})

eachBackend(t, 'cost reads: summary, by agent, by provider, windows, quota windows, issue summary', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const bob = (await api.call('POST', `/api/squads/${squadId}/agents`, { name: 'bob', role: 'engineer', adapterType: 'process' })).body.agent
  const issue = (await api.call('POST', `/api/squads/${squadId}/issues`, { title: 'I' })).body.issue
  const record = (body: Record<string, unknown>) => api.call('POST', `/api/squads/${squadId}/cost-events`, { inputTokens: 0, outputTokens: 0, ...body })
  await record({ agentId, model: 'claude-opus-4', inputTokens: 100, cachedInputTokens: 50, outputTokens: 10, costCents: 300, issueId: issue.id })
  await record({ agentId, model: 'gpt-5', inputTokens: 20, outputTokens: 2, costCents: 45, issueId: issue.id })
  await record({ agentId: bob.id, model: 'claude-haiku', inputTokens: 7, outputTokens: 3, costCents: 5 })
  await record({ agentId: bob.id, model: 'claude-sonnet', inputTokens: 1000, outputTokens: 500, costCents: 0, billingType: 'subscription_included' })

  const summary = (await api.call('GET', `/api/squads/${squadId}/costs/summary`, undefined, agentToken)).body.summary
  t.match(summary, { totalCents: 350, costCents: 350, inputTokens: 1127, cachedInputTokens: 50, outputTokens: 515, subscriptionTokens: 1500, events: 4, period: 'mtd' })
  t.equal(summary.month, new Date().toISOString().slice(0, 7))
  t.equal(summary.periodStart, `${summary.month}-01T00:00:00.000Z`)

  const byAgent = (await api.call('GET', `/api/squads/${squadId}/costs/by-agent`)).body
  t.same(
    byAgent.agents.map((a: Record<string, unknown>) => [a.name, a.costCents, a.inputTokens, a.outputTokens]),
    [
      ['alice', 345, 120, 12],
      ['bob', 5, 1007, 503],
    ],
    'sorted by spend',
  )
  const byProvider = (await api.call('GET', `/api/squads/${squadId}/costs/by-provider`)).body.providers
  t.same(
    byProvider.map((p: Record<string, unknown>) => [p.provider, p.costCents, p.events]),
    [
      ['anthropic', 305, 3],
      ['openai', 45, 1],
    ],
  )

  const windows = (await api.call('GET', `/api/squads/${squadId}/costs/window-spend`)).body.windows
  t.same(
    windows.map((w: { window: string; hours: number }) => [w.window, w.hours]),
    [
      ['5h', 5],
      ['24h', 24],
      ['7d', 168],
    ],
  )
  for (const w of windows) {
    t.equal(w.costCents, 350, `${w.window} holds every recent event`)
    t.equal(w.events, 4)
    t.equal(w.subscriptionTokens, 1500)
    t.same(
      w.providers.map((p: { provider: string }) => p.provider),
      ['anthropic', 'openai'],
    )
    t.ok(Date.parse(w.endsAt) - Date.parse(w.startsAt) === w.hours * 3_600_000)
  }

  const issueSummary = (await api.call('GET', `/api/issues/${issue.identifier}/cost-summary`, undefined, agentToken)).body.summary
  t.match(issueSummary, { issueId: issue.id, identifier: issue.identifier, totalCents: 345, inputTokens: 120, cachedInputTokens: 50, outputTokens: 12, events: 2, period: 'all' })
  const other = await api.seed()
  t.equal((await api.call('GET', `/api/issues/${issue.id}/cost-summary`, undefined, other.agentToken)).status, 404)
  t.equal((await api.call('GET', `/api/squads/${squadId}/costs/summary`, undefined, other.agentToken)).status, 404)

  // Quota windows: one per configured budget.
  t.same((await api.call('GET', `/api/squads/${squadId}/costs/quota-windows`)).body.windows, [], 'no budgets, no windows')
  await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetMonthlyCents: 400, budgetMonthlyTokens: 10_000 })
  await api.call('PATCH', `/api/agents/${bob.id}/budgets`, { budgetMonthlyCents: 5 })
  const quota = (await api.call('GET', `/api/squads/${squadId}/costs/quota-windows`)).body
  t.same(
    quota.windows.map((w: Record<string, unknown>) => [w.scopeType, w.metric, w.window, w.limit, w.used, w.remaining, w.percentUsed, w.status]),
    [
      ['squad', 'cents', 'calendar_month_utc', 400, 350, 50, 87.5, 'warning'],
      ['squad', 'tokens', 'calendar_month_utc', 10_000, 1500, 8500, 15, 'ok'],
      ['agent', 'cents', 'calendar_month_utc', 5, 5, 0, 100, 'exceeded'],
    ],
  )
  t.equal(quota.windows[0].resetsAt, new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1)).toISOString())
})

let clock = Date.parse('2026-02-03T23:59:59.000Z')
eachBackend(
  t,
  'cost reads: by UTC day and by model, for the current or a given month',
  async (t, api) => {
    const { squadId, agentId, agentToken } = await api.seed()
    const record = async (body: Record<string, unknown>) => t.equal((await api.call('POST', `/api/squads/${squadId}/cost-events`, { agentId, inputTokens: 0, outputTokens: 0, ...body })).status, 201)
    const get = (path: string, token?: string) => api.call('GET', `/api/squads/${squadId}/costs/${path}`, undefined, token)
    clock = Date.parse('2026-02-03T23:59:59.000Z')
    await record({ model: 'claude-opus-4', inputTokens: 100, cachedInputTokens: 50, outputTokens: 10, costCents: 300 })
    clock = Date.parse('2026-02-04T00:00:00.000Z')
    await record({ model: 'claude-opus-4', inputTokens: 10, outputTokens: 1, costCents: 30 })
    await record({ model: 'gpt-5-codex', inputTokens: 1000, outputTokens: 100, costCents: 0, costStatus: 'unpriced' })
    await record({ model: 'claude-sonnet-4-5', inputTokens: 2000, outputTokens: 200, costCents: 0, billingType: 'subscription_included' })
    clock = Date.parse('2026-02-06T08:00:00.000Z')

    // The current month, day by day up to today, days without events at zero.
    const days = await get('by-day', agentToken)
    t.equal(days.status, 200, 'an agent key of the squad reads it')
    t.match(days.body, { month: '2026-02', periodStart: '2026-02-01T00:00:00.000Z', periodEnd: '2026-03-01T00:00:00.000Z' })
    t.same(
      days.body.days.map((d: Record<string, number>) => [d.day, d.costCents, d.inputTokens, d.cachedInputTokens, d.outputTokens, d.subscriptionTokens, d.unpricedTokens, d.events]),
      [
        ['2026-02-01', 0, 0, 0, 0, 0, 0, 0],
        ['2026-02-02', 0, 0, 0, 0, 0, 0, 0],
        ['2026-02-03', 300, 100, 50, 10, 0, 0, 1],
        // Subscription tokens count the subscription event and the unpriced one (what token ceilings count).
        ['2026-02-04', 30, 3010, 0, 301, 3300, 1100, 3],
        ['2026-02-05', 0, 0, 0, 0, 0, 0, 0],
        ['2026-02-06', 0, 0, 0, 0, 0, 0, 0],
      ],
      'UTC days, 23:59:59 on the 3rd and midnight on the 4th apart',
    )

    const models = await get('by-model')
    t.equal(models.status, 200)
    t.equal(models.body.month, '2026-02')
    t.same(
      models.body.models.map((m: Record<string, unknown>) => [m.provider, m.model, m.billingType, m.costCents, m.subscriptionTokens, m.unpricedTokens, m.events]),
      [
        ['anthropic', 'claude-opus-4', 'metered_api', 330, 0, 0, 2],
        ['anthropic', 'claude-sonnet-4-5', 'subscription_included', 0, 2200, 0, 1],
        ['openai', 'gpt-5-codex', 'metered_api', 0, 1100, 1100, 1],
      ],
      'biggest spend first, then most tokens',
    )

    // A new month starts empty; the past one is still there, whole.
    clock = Date.parse('2026-03-02T10:00:00.000Z')
    await record({ model: 'claude-opus-4', inputTokens: 1, outputTokens: 1, costCents: 5 })
    const march = (await get('by-day')).body
    t.same(
      march.days.map((d: Record<string, number>) => [d.day, d.costCents]),
      [
        ['2026-03-01', 0],
        ['2026-03-02', 5],
      ],
    )
    t.same(
      (await get('by-model')).body.models.map((m: Record<string, unknown>) => [m.model, m.costCents]),
      [['claude-opus-4', 5]],
    )
    const february = (await get('by-day?month=2026-02')).body
    t.equal(february.days.length, 28, 'a past month has all its days')
    t.equal(
      february.days.reduce((s: number, d: { costCents: number }) => s + d.costCents, 0),
      330,
    )
    t.equal((await get('by-model?month=2026-02')).body.models.length, 3)
    const future = (await get('by-day?month=2026-04')).body
    t.same([future.days, (await get('by-model?month=2026-04')).body.models], [[], []], 'a month to come has nothing yet')

    // Bad input: a clear 400 naming the query; other squads' keys see nothing.
    for (const bad of ['2026-13', '2026-2', 'feb', '2026-02-01', '0999-01']) {
      for (const path of ['by-day', 'by-model']) {
        const r = await get(`${path}?month=${bad}`)
        t.equal(r.status, 400, `${path} month=${bad}`)
        t.equal(r.body.code, 'invalid_payload')
      }
    }
    const other = await api.seed()
    t.equal((await get('by-day', other.agentToken)).status, 404, "another squad's agent does not see this squad")
    t.equal((await get('by-model', other.agentToken)).status, 404)
    t.equal((await api.call('GET', `/api/squads/${unknownId}/costs/by-day`)).status, 404)
    t.equal((await api.call('GET', `/api/squads/${unknownId}/costs/by-model`)).status, 404)
  },
  () => ({ now: () => new Date(clock) }),
)
