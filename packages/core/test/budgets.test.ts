import t from 'tap'
import { outboxRows } from './helpers/governance.js'
import { eachBackend, type TestApi } from './helpers/instance.js'

const cost = (api: TestApi, squadId: string, body: Record<string, unknown>, token?: string) =>
  api.call('POST', `/api/squads/${squadId}/cost-events`, { model: 'gpt-5', inputTokens: 0, outputTokens: 0, ...body }, token)

const actions = async (api: TestApi, squadId: string, prefix: string) =>
  (await api.call('GET', `/api/squads/${squadId}/activity?limit=500`)).body.activity.filter((a: { action: string }) => a.action.startsWith(prefix)).reverse()

const newIssue = async (api: TestApi, squadId: string, extra: Record<string, unknown> = {}) =>
  (await api.call('POST', `/api/squads/${squadId}/issues`, { title: 'work', ...extra })).body.issue.id as string

eachBackend(t, 'squad budget: thresholds once per crossing, hard stop blocks checkouts, raising it lifts the stop', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const issue = await newIssue(api, squadId)

  const forbidden = await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetMonthlyCents: 5 }, agentToken)
  t.equal(forbidden.status, 403, 'a budget set by an agent key')
  t.equal(forbidden.body.code, 'forbidden')
  const stranger = await api.seed()
  t.equal((await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetMonthlyCents: 5 }, stranger.agentToken)).status, 404, "another squad's agent")
  t.equal((await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetMonthlyCents: -5 })).status, 400)
  t.equal((await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetHardStop: true })).status, 400, 'budgetMonthlyCents is required')

  const set = await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetMonthlyCents: 1000, budgetHardStop: true })
  t.equal(set.status, 200)
  t.same(set.body.budget, { budgetMonthlyCents: 1000, spentMonthlyCents: 0, percentUsed: 0, budgetHardStop: true, budgetMonthlyTokens: null, spentMonthlyTokens: 0, tokenPercentUsed: 0 })

  await cost(api, squadId, { agentId, costCents: 799 })
  t.same(await actions(api, squadId, 'budget.'), [], 'below 80%: nothing')
  await cost(api, squadId, { agentId, costCents: 1 })
  await cost(api, squadId, { agentId, costCents: 50 })
  let crossed = await actions(api, squadId, 'budget.')
  t.same(
    crossed.map((a: { action: string }) => a.action),
    ['budget.soft_threshold_crossed'],
    '80% crossed once',
  )
  t.match(crossed[0], { entityType: 'squad', entityId: squadId, details: { scopeType: 'squad', metric: 'cents', level: 'soft', thresholdPercent: 80, limit: 1000, observed: 800 } })
  t.equal((await api.call('POST', `/api/issues/${issue}/checkout`, { agentId, expectedStatuses: ['todo', 'in_progress'] }, agentToken)).status, 200, 'a warning does not block')
  await api.call('POST', `/api/issues/${issue}/release`, undefined, agentToken)

  await cost(api, squadId, { agentId, costCents: 150 })
  await cost(api, squadId, { agentId, costCents: 10 })
  crossed = await actions(api, squadId, 'budget.')
  t.same(
    crossed.map((a: { action: string }) => a.action),
    ['budget.soft_threshold_crossed', 'budget.hard_threshold_crossed'],
    '100% crossed once',
  )
  t.match(crossed[1].details, { level: 'hard', limit: 1000, observed: 1000 })

  const refused = await api.call('POST', `/api/issues/${issue}/checkout`, { agentId, expectedStatuses: ['todo', 'in_progress'] }, agentToken)
  t.equal(refused.status, 409)
  t.equal(refused.body.code, 'budget_exhausted')
  const dash = (await api.call('GET', `/api/squads/${squadId}/dashboard`)).body
  t.equal(dash.budgets.activeIncidents, 1, 'one budget in trouble is one incident')
  t.match(dash.costs, { monthSpendCents: 1010, monthBudgetCents: 1000, monthUtilizationPercent: 101 })

  // Without the hard stop the squad budget only warns.
  await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetMonthlyCents: 1000, budgetHardStop: false })
  t.equal((await api.call('POST', `/api/issues/${issue}/checkout`, { agentId, expectedStatuses: ['todo', 'in_progress'] }, agentToken)).status, 200)
  await api.call('POST', `/api/issues/${issue}/release`, undefined, agentToken)
  t.equal((await actions(api, squadId, 'budget.')).length, 2, 're-setting the same limit announces nothing again')

  // Raising the limit above the spend resolves the incidents; crossing the new 80% is a new crossing.
  await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetMonthlyCents: 2000, budgetHardStop: true })
  t.equal((await api.call('GET', `/api/squads/${squadId}/dashboard`)).body.budgets.activeIncidents, 0)
  t.equal((await api.call('POST', `/api/issues/${issue}/checkout`, { agentId, expectedStatuses: ['todo', 'in_progress'] }, agentToken)).status, 200)
  await cost(api, squadId, { agentId, costCents: 600 })
  t.same(
    (await actions(api, squadId, 'budget.')).map((a: { details: { limit: number } }) => a.details.limit),
    [1000, 1000, 2000],
  )

  // Lowering the limit under the spend crosses both thresholds at once.
  await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetMonthlyCents: 100 })
  t.same(
    (await actions(api, squadId, 'budget.')).slice(3).map((a: { action: string }) => a.action),
    ['budget.hard_threshold_crossed'],
    'the open soft incident stays; the hard one is new',
  )

  // null removes the limit.
  const removed = await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetMonthlyCents: null })
  t.match(removed.body.budget, { budgetMonthlyCents: null, percentUsed: 0, spentMonthlyCents: 1610 })
  t.equal((await api.call('GET', `/api/squads/${squadId}/dashboard`)).body.costs.monthUtilizationPercent, 0)

  // The tower hears the budget changes with the real month-to-date spend, under its own names.
  const rows = await outboxRows(api)
  const squadUpserts = rows.filter((r) => r.entityType === 'squad').map((r) => r.payload)
  t.match(squadUpserts.at(-1), { type: 'squad', localId: squadId, budgetMonthlyCents: null, spentMonthlyCents: 1610 })
  const towerActions = rows.filter((r) => r.entityType === 'activity_event').map((r) => r.payload.action)
  t.ok(towerActions.includes('squad.budget_updated'))
  t.equal(towerActions.filter((a) => a === 'budget_soft_threshold_crossed').length, 2)
  t.equal(towerActions.filter((a) => a === 'budget_hard_threshold_crossed').length, 2)
})

eachBackend(t, 'agent budget: a cost event that pushes the agent over pauses it; its checkout is kept; raising the budget resumes it', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const held = await newIssue(api, squadId)
  const next = await newIssue(api, squadId)
  t.equal((await api.call('PATCH', `/api/agents/${agentId}/budgets`, { budgetMonthlyCents: 100 }, agentToken)).status, 403, 'a budget set by an agent key')
  const set = await api.call('PATCH', `/api/agents/${agentId}/budgets`, { budgetMonthlyCents: 100 })
  t.match(set.body.budget, { agentId, name: 'alice', budgetMonthlyCents: 100, spentMonthlyCents: 0, status: 'active' })
  t.equal((await api.call('POST', `/api/issues/${held}/checkout`, { agentId }, agentToken)).status, 200)

  const over = await cost(api, squadId, { agentId, costCents: 150, issueId: held }, agentToken)
  t.equal(over.status, 201, 'the cost is recorded: it was already incurred')
  const agent = (await api.call('GET', `/api/agents/${agentId}`)).body.agent
  t.equal(agent.status, 'paused')
  t.equal(agent.pauseReason, 'budget')
  const issue = (await api.call('GET', `/api/issues/${held}`)).body.issue
  t.equal(issue.status, 'in_progress', 'the held issue keeps its status')
  t.equal(issue.checkoutAgentId, agentId, 'and its checkout, so nobody silently takes over half-done work')

  const again = await api.call('POST', `/api/issues/${next}/checkout`, { agentId }, agentToken)
  t.equal(again.status, 409)
  t.equal(again.body.code, 'agent_not_active', 'a paused agent checks nothing out')
  t.equal((await api.call('POST', `/api/issues/${held}/checkout`, { agentId }, agentToken)).body.code, 'agent_not_active')
  t.equal((await api.call('POST', `/api/agents/${agentId}/resume`)).body.code, 'budget_exhausted', 'resuming by hand needs a budget first')

  const crossed = await actions(api, squadId, 'budget.')
  t.same(
    crossed.map((a: { action: string; entityId: string }) => [a.action, a.entityId]),
    [
      ['budget.soft_threshold_crossed', agentId],
      ['budget.hard_threshold_crossed', agentId],
    ],
  )
  const paused = await actions(api, squadId, 'agent.paused')
  t.equal(paused.length, 1)
  t.match(paused[0], { actorType: 'system', details: { reason: 'budget' } })
  await cost(api, squadId, { agentId, costCents: 5 })
  t.equal((await actions(api, squadId, 'budget.')).length, 2, 'further spend announces nothing again')

  const overview = (await api.call('GET', `/api/squads/${squadId}/budgets/overview`, undefined, agentToken)).body
  t.match(overview.agents, [{ agentId, budgetMonthlyCents: 100, spentMonthlyCents: 155, percentUsed: 155, status: 'paused', pauseReason: 'budget' }])
  t.equal((await api.call('GET', `/api/squads/${squadId}/dashboard`)).body.budgets.pausedAgents, 1)
  const upsert = (await outboxRows(api))
    .filter((r) => r.entityType === 'agent')
    .map((r) => r.payload)
    .at(-1)
  t.match(upsert, { status: 'paused', budgetMonthlyCents: 100, spentMonthlyCents: 150 }, 'the pause reaches the tower with the spend at that moment')

  const raised = await api.call('PATCH', `/api/agents/${agentId}/budgets`, { budgetMonthlyCents: 1000 })
  t.match(raised.body.budget, { status: 'active', pauseReason: null, spentMonthlyCents: 155 })
  t.equal((await api.call('POST', `/api/issues/${next}/checkout`, { agentId }, agentToken)).status, 200)
  t.equal((await api.call('GET', `/api/squads/${squadId}/dashboard`)).body.budgets.activeIncidents, 0)

  // A manual pause is not lifted by a budget change.
  await api.call('POST', `/api/agents/${agentId}/pause`)
  await api.call('PATCH', `/api/agents/${agentId}/budgets`, { budgetMonthlyCents: 5000 })
  t.equal((await api.call('GET', `/api/agents/${agentId}`)).body.agent.pauseReason, 'manual')
})

eachBackend(t, 'project budget: the project pauses when its spend reaches budgetCents', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const project = (await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'P', budgetCents: 500 })).body.project
  const a = await newIssue(api, squadId, { projectId: project.id })
  const b = await newIssue(api, squadId, { projectId: project.id })
  const outside = await newIssue(api, squadId)

  await cost(api, squadId, { agentId, costCents: 300, issueId: a })
  await cost(api, squadId, { agentId, costCents: 100, issueId: outside })
  t.equal((await api.call('GET', `/api/projects/${project.id}`)).body.project.pauseReason, null, 'spend outside the project does not count')
  await cost(api, squadId, { agentId, costCents: 200, issueId: b })
  const paused = (await api.call('GET', `/api/projects/${project.id}`)).body.project
  t.equal(paused.pauseReason, 'budget')
  t.ok(paused.pausedAt)
  const refused = await api.call('POST', `/api/issues/${a}/checkout`, { agentId }, agentToken)
  t.equal(refused.body.code, 'project_paused')
  t.same(
    (await actions(api, squadId, 'budget.')).map((x: { action: string; entityType: string }) => [x.action, x.entityType]),
    [
      ['budget.soft_threshold_crossed', 'project'],
      ['budget.hard_threshold_crossed', 'project'],
    ],
  )
  t.equal((await api.call('GET', `/api/squads/${squadId}/dashboard`)).body.budgets.pausedProjects, 1)
  const upsert = (await outboxRows(api))
    .filter((r) => r.entityType === 'project')
    .map((r) => r.payload)
    .at(-1)
  t.equal(upsert?.status, 'paused')

  const unpause = await api.call('PATCH', `/api/projects/${project.id}`, { pauseReason: null })
  t.equal(unpause.status, 409, 'unpausing by hand while the budget is spent')
  t.equal(unpause.body.code, 'budget_exhausted')
  t.equal((await api.call('GET', `/api/projects/${project.id}`)).body.project.pauseReason, 'budget', 'nothing changed')

  const raised = await api.call('PATCH', `/api/projects/${project.id}`, { budgetCents: 1000 })
  t.equal(raised.body.project.pauseReason, null, 'a budget above the spend lifts the budget pause')
  t.equal(raised.body.project.pausedAt, null, 'lifting the pause clears pausedAt')
  t.equal((await api.call('POST', `/api/issues/${a}/checkout`, { agentId }, agentToken)).status, 200)
  const overview = (await api.call('GET', `/api/squads/${squadId}/budgets/overview`)).body
  t.match(overview.projects, [{ projectId: project.id, budgetCents: 1000, spentCents: 500, percentUsed: 50, pauseReason: null }])

  // Lowering the budget under the spend pauses at once; a manual pause set in the same request wins.
  t.equal((await api.call('PATCH', `/api/projects/${project.id}`, { budgetCents: 400 })).body.project.pauseReason, 'budget')
  t.equal((await api.call('PATCH', `/api/projects/${project.id}`, { budgetCents: 5000, pauseReason: 'manual' })).body.project.pauseReason, 'manual')
  // A zero budget is spent from the start.
  const zero = (await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'Z', budgetCents: 0 })).body.project
  t.equal(zero.pauseReason, 'budget')
})

eachBackend(t, 'token ceilings; concurrent cost events give exact totals and one entry per crossing', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const bob = (await api.call('POST', `/api/squads/${squadId}/agents`, { name: 'bob', role: 'engineer', adapterType: 'process' })).body.agent
  const issue = await newIssue(api, squadId)
  await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetMonthlyCents: null, budgetHardStop: true, budgetMonthlyTokens: 10_000 })
  await api.call('PATCH', `/api/agents/${bob.id}/budgets`, { budgetMonthlyCents: null, budgetMonthlyTokens: 1_000 })

  await cost(api, squadId, { agentId, costCents: 500, inputTokens: 50_000, outputTokens: 50_000 })
  t.equal((await api.call('GET', `/api/squads/${squadId}/budgets/overview`)).body.squad.spentMonthlyTokens, 0, 'metered tokens do not count')
  await cost(api, squadId, { agentId: bob.id, costCents: 0, inputTokens: 900, cachedInputTokens: 50, outputTokens: 100, billingType: 'subscription_included' })
  const bobNow = (await api.call('GET', `/api/agents/${bob.id}`)).body.agent
  t.equal(bobNow.pauseReason, 'budget', 'the agent token ceiling pauses the agent')
  t.same(
    (await actions(api, squadId, 'budget.')).map((a: { details: { metric: string; level: string; scopeType: string } }) => [a.details.scopeType, a.details.metric, a.details.level]),
    [
      ['agent', 'tokens', 'soft'],
      ['agent', 'tokens', 'hard'],
    ],
  )

  await cost(api, squadId, { agentId, costCents: 3, inputTokens: 9_000, outputTokens: 0, billingType: 'subscription_overage' })
  const refused = await api.call('POST', `/api/issues/${issue}/checkout`, { agentId }, agentToken)
  t.equal(refused.body.code, 'budget_exhausted', 'the squad token ceiling stops checkouts with budgetHardStop')
  const o = (await api.call('GET', `/api/squads/${squadId}/budgets/overview`)).body
  t.match(o.squad, { budgetMonthlyTokens: 10_000, spentMonthlyTokens: 10_050, tokenPercentUsed: 100.5, budgetMonthlyCents: null, percentUsed: 0 })
  await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetMonthlyCents: null, budgetMonthlyTokens: 20_000 })
  t.equal((await api.call('POST', `/api/issues/${issue}/checkout`, { agentId }, agentToken)).status, 200, 'budgetMonthlyTokens omitted keeps it; raised lifts the stop')
  t.equal((await api.call('GET', `/api/squads/${squadId}/budgets/overview`)).body.squad.budgetMonthlyTokens, 20_000)

  // Concurrent cost events: exact totals and one entry per crossing.
  {
    const { squadId, agentId } = await api.seed('Concurrent')
    await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetMonthlyCents: 100 })
    const results = await Promise.all(Array.from({ length: 30 }, () => cost(api, squadId, { agentId, costCents: 5, inputTokens: 3 })))
    t.same([...new Set(results.map((r) => r.status))], [201])
    const summary = (await api.call('GET', `/api/squads/${squadId}/costs/summary`)).body.summary
    t.match(summary, { totalCents: 150, inputTokens: 90, events: 30 })
    const crossed = await actions(api, squadId, 'budget.')
    t.same(crossed.map((a: { action: string }) => a.action).sort(), ['budget.hard_threshold_crossed', 'budget.soft_threshold_crossed'])
    t.same(crossed.map((a: { details: { observed: number } }) => a.details.observed).sort(), [100, 80], 'each recorded by the event that crossed it')
  }
})
