import t from 'tap'
import { eachBackend } from './helpers/instance.js'

// Cost events say how their cents were found; an unpriced one never carries made-up cents, and its
// tokens are counted apart everywhere spend is read.
eachBackend(t, 'cost status: unpriced events carry 0 cents beside the status, their tokens counted apart', async (t, api) => {
  const { squadId, agentId } = await api.seed()
  const post = (body: Record<string, unknown>) => api.call('POST', `/api/squads/${squadId}/cost-events`, { agentId, model: 'gpt-5-codex', inputTokens: 100, outputTokens: 20, ...body })
  const lying = await post({ costCents: 5, costStatus: 'unpriced' })
  t.equal(lying.status, 400, 'an unpriced event with cents is refused')
  t.same(
    lying.body.details?.map((d: { path: string }) => d.path),
    ['/costCents'],
  )
  const unpriced = await post({ costCents: 0, costStatus: 'unpriced', cachedInputTokens: 30, cacheWriteTokens: 7, billingType: 'unknown' })
  t.equal(unpriced.status, 201, JSON.stringify(unpriced.body))
  t.match(unpriced.body.costEvent, { costCents: 0, costStatus: 'unpriced', cacheWriteTokens: 7, billingType: 'unknown' })
  const priced = await post({ costCents: 12, costStatus: 'estimated' })
  t.match(priced.body.costEvent, { costCents: 12, costStatus: 'estimated', cacheWriteTokens: 0 })
  const plain = await post({ costCents: 3 })
  t.equal(plain.body.costEvent.costStatus, 'reported', 'reported by default')

  const summary = (await api.call('GET', `/api/squads/${squadId}/costs/summary`)).body.summary
  t.match(summary, { costCents: 15, inputTokens: 300, cachedInputTokens: 30, cacheWriteTokens: 7, outputTokens: 60, unpricedTokens: 157, events: 3 })
  const byAgent = (await api.call('GET', `/api/squads/${squadId}/costs/by-agent`)).body.agents
  t.match(byAgent[0], { agentId, costCents: 15, unpricedTokens: 157 })
  const windows = (await api.call('GET', `/api/squads/${squadId}/costs/window-spend`)).body.windows
  t.match(windows[0], { window: '5h', costCents: 15, unpricedTokens: 157, cacheWriteTokens: 7 })
  const dashboard = (await api.call('GET', `/api/squads/${squadId}/dashboard`)).body
  t.match(dashboard.costs, { monthSpendCents: 15, monthUnpricedTokens: 157, monthCacheWriteTokens: 7, monthInputTokens: 300, monthOutputTokens: 60 })
  const overview = (await api.call('GET', `/api/squads/${squadId}/budgets/overview`)).body
  t.equal(overview.squad.spentMonthlyTokens, 150, 'token ceilings count the unpriced (and unknown-billed) tokens: input + cached + output')
})
