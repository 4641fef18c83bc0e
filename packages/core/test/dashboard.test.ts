import t from 'tap'
import type { AdapterWakeResult } from '@slaw/core'
import { eachBackend } from './helpers/instance.js'
import { runHarness } from './helpers/runs.js'

function lastUtcDays(n: number): string[] {
  const now = new Date()
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())
  return Array.from({ length: n }, (_, i) => new Date(today - (n - 1 - i) * 86_400_000).toISOString().slice(0, 10))
}

eachBackend(t, 'dashboard: an empty squad', async (t, api) => {
  const { squadId, agentToken } = await api.seed()
  const res = await api.call('GET', `/api/squads/${squadId}/dashboard`, undefined, agentToken)
  t.equal(res.status, 200)
  t.same(res.body, {
    squadId,
    agents: { active: 1, running: 0, paused: 0, error: 0 },
    tasks: { open: 0, inProgress: 0, blocked: 0, done: 0 },
    costs: {
      monthSpendCents: 0,
      monthBudgetCents: null,
      monthUtilizationPercent: 0,
      monthInputTokens: 0,
      monthCachedInputTokens: 0,
      monthCacheWriteTokens: 0,
      monthOutputTokens: 0,
      monthUnpricedTokens: 0,
    },
    pendingApprovals: 0,
    budgets: { activeIncidents: 0, pendingApprovals: 0, pausedAgents: 0, pausedProjects: 0 },
    // Heartbeat runs are not stored yet: 14 dated rows of zeros, oldest first, today last.
    runActivity: lastUtcDays(14).map((date) => ({ date, succeeded: 0, failed: 0, other: 0, total: 0 })),
  })
  const other = await api.seed()
  t.equal((await api.call('GET', `/api/squads/${squadId}/dashboard`, undefined, other.agentToken)).status, 404)
  t.equal((await api.call('GET', '/api/squads/nope/dashboard')).status, 404)
})

eachBackend(t, 'dashboard: live counts, month costs, approvals and budget figures', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const other = await api.seed()
  const mk = async (name: string) => (await api.call('POST', `/api/squads/${squadId}/agents`, { name, role: 'x', adapterType: 'process' })).body.agent.id as string
  const bob = await mk('bob')
  const carol = await mk('carol')
  const dan = await mk('dan')
  await api.call('POST', `/api/agents/${bob}/pause`)
  await api.call('POST', `/api/agents/${dan}/terminate`)
  await api.call('PATCH', `/api/agents/${carol}/budgets`, { budgetMonthlyCents: 10 })
  await api.call('POST', `/api/squads/${squadId}/cost-events`, { agentId: carol, model: 'gpt-5', inputTokens: 1, outputTokens: 1, costCents: 10 })

  const issue = async (status?: string) => (await api.call('POST', `/api/squads/${squadId}/issues`, { title: 't', ...(status ? { status } : {}) })).body.issue.id as string
  const todo1 = await issue()
  await issue('backlog')
  const blocked = await issue('blocked')
  const review = await issue('in_review')
  const done = await issue()
  const cancelled = await issue()
  const deleted = await issue()
  await api.call('POST', `/api/issues/${todo1}/checkout`, { agentId }, agentToken)
  await api.call('PATCH', `/api/issues/${review}`, { status: 'done' })
  await api.call('PATCH', `/api/issues/${done}`, { status: 'done' })
  await api.call('PATCH', `/api/issues/${cancelled}`, { status: 'cancelled' })
  await api.call('DELETE', `/api/issues/${deleted}`)
  await api.call('POST', `/api/squads/${other.squadId}/issues`, { title: 'elsewhere' })
  void blocked

  await api.call('PATCH', `/api/squads/${squadId}/budgets`, { budgetMonthlyCents: 4000 })
  await api.call('POST', `/api/squads/${squadId}/cost-events`, { agentId, model: 'gpt-5', inputTokens: 1, outputTokens: 1, costCents: 1000 })
  await api.call('POST', `/api/squads/${other.squadId}/cost-events`, { agentId: other.agentId, model: 'gpt-5', inputTokens: 1, outputTokens: 1, costCents: 999 })
  await api.call('POST', `/api/squads/${squadId}/approvals`, { type: 'request_board_approval', requestedByAgentId: agentId, payload: { title: 'a', summary: 'b' } })
  await api.call('POST', `/api/squads/${squadId}/agent-hires`, { name: 'eve', role: 'x' })
  await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'spent', budgetCents: 0 })
  await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'paused by hand' }).then((r) => api.call('PATCH', `/api/projects/${r.body.project.id}`, { pauseReason: 'manual' }))

  const d = (await api.call('GET', `/api/squads/${squadId}/dashboard`)).body
  t.same(d.agents, { active: 1, running: 0, paused: 2, error: 0 }, 'terminated agents are not counted')
  t.same(d.tasks, { open: 3, inProgress: 1, blocked: 1, done: 2 }, 'open is everything not done or cancelled')
  t.match(d.costs, { monthSpendCents: 1010, monthBudgetCents: 4000, monthUtilizationPercent: 25.25, monthUnpricedTokens: 0 })
  t.equal(d.pendingApprovals, 2)
  t.same(d.budgets, { activeIncidents: 2, pendingApprovals: 1, pausedAgents: 1, pausedProjects: 1 }, 'carol and the zero-budget project; one hire waits')

  // A deleted project's incident is over.
  const spentProject = (await api.call('GET', `/api/squads/${squadId}/projects`)).body.projects.find((p: { name: string }) => p.name === 'spent')
  await api.call('DELETE', `/api/projects/${spentProject.id}`)
  t.match((await api.call('GET', `/api/squads/${squadId}/dashboard`)).body.budgets, { activeIncidents: 1, pausedProjects: 0 })

  // The counters follow every status change and match a live count.
  const listed = (await api.call('GET', `/api/squads/${squadId}/issues?limit=500`)).body.issues as Array<{ status: string }>
  t.equal(d.tasks.open, listed.filter((i) => i.status !== 'done' && i.status !== 'cancelled').length)
  t.equal(d.tasks.done, listed.filter((i) => i.status === 'done').length)
})

eachBackend(t, 'activity writes: Operator only, sensitive values redacted on write, automatic entries too', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const details = {
    token: 'abc',
    apiKey: 'k-123',
    'x-api-key': 'k-456',
    password: 'hunter2',
    clientSecret: 's',
    authorization: 'Basic dXNlcjpwYXNz',
    nested: { refresh_token: 'r', list: ['Bearer abcdefghijklmnop', 'plain'] },
    note: 'deploy with sk-ant-abcdefghijklmnopqrstuvwxyz and jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.c2lnbmF0dXJlc2lnbg',
    pem: '-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----',
    inputTokens: 1200,
    budgetMonthlyTokens: 5000,
    ok: 'visible',
  }
  const res = await api.call('POST', `/api/squads/${squadId}/activity`, { actorId: 'deploy-bot', action: 'deploy.finished', entityType: 'deployment', entityId: 'd-1', agentId, details })
  t.equal(res.status, 201)
  const stored = res.body.activity
  t.match(stored, { actorType: 'system', actorId: 'deploy-bot', action: 'deploy.finished', agentId })
  t.same(stored.details, {
    token: '[REDACTED]',
    apiKey: '[REDACTED]',
    'x-api-key': '[REDACTED]',
    password: '[REDACTED]',
    clientSecret: '[REDACTED]',
    authorization: '[REDACTED]',
    nested: { refresh_token: '[REDACTED]', list: ['Bearer [REDACTED]', 'plain'] },
    note: 'deploy with [REDACTED] and jwt [REDACTED]',
    pem: '[REDACTED]',
    inputTokens: 1200,
    budgetMonthlyTokens: 5000,
    ok: 'visible',
  })
  const read = (await api.call('GET', `/api/squads/${squadId}/activity?entityType=deployment`)).body.activity
  t.same(read[0].details, stored.details, 'what is stored is redacted, not only what is shown')

  t.equal((await api.call('POST', `/api/squads/${squadId}/activity`, { actorId: 'x', action: 'a.b', entityType: 'e', entityId: '1' }, agentToken)).status, 403)
  t.equal((await api.call('POST', `/api/squads/${squadId}/activity`, { action: 'a.b', entityType: 'e', entityId: '1' })).status, 400, 'actorId is required')

  // Automatic entries go through the same redaction: a decision note carrying a key.
  const approval = (await api.call('POST', `/api/squads/${squadId}/approvals`, { type: 'request_board_approval', requestedByAgentId: agentId, payload: { title: 'a', summary: 'b' } })).body.approval
  await api.call('POST', `/api/approvals/${approval.id}/approve`, { decisionNote: 'use key ghp_abcdefghijklmnopqrstuvwxyz0123 for it' })
  const entry = (await api.call('GET', `/api/squads/${squadId}/activity?entityType=approval&entityId=${approval.id}`)).body.activity[0]
  t.equal(entry.action, 'approval.approved')
  t.equal(entry.details.decisionNote, 'use key [REDACTED] for it')
})

const harness = runHarness()

eachBackend(
  t,
  'dashboard: agent states come from runs (a run in flight is running, a last run that failed is error)',
  async (t, api) => {
    harness.reset()
    const s = await harness.squadWithAgent(api)
    const agents = async () => (await api.call('GET', `/api/squads/${s.squadId}/dashboard`)).body.agents
    t.same(await agents(), { active: 1, running: 0, paused: 0, error: 0 }, 'never run: active')

    let finish: ((r: AdapterWakeResult) => void) | undefined
    harness.adapter.next = () => new Promise((resolve) => (finish = resolve))
    await api.call('POST', `/api/agents/${s.agentId}/wake`, {})
    const draining = harness.drain(api)
    await new Promise<void>((resolve) => {
      const check = () => (finish ? resolve() : setTimeout(check, 5))
      check()
    })
    t.same(await agents(), { active: 0, running: 1, paused: 0, error: 0 }, 'a run in flight: running')
    finish!({ status: 'failed', exitCode: 3, error: 'exited 3' })
    await draining

    t.same(await agents(), { active: 0, running: 0, paused: 0, error: 1 }, 'the last run failed: error')
    harness.adapter.next = async () => ({ status: 'succeeded', exitCode: 0 })
    await api.call('POST', `/api/agents/${s.agentId}/wake`, {})
    await harness.drain(api)
    t.same(await agents(), { active: 1, running: 0, paused: 0, error: 0 }, 'a later run succeeded: active again')
    await api.call('POST', `/api/agents/${s.agentId}/pause`, {})
    t.same(await agents(), { active: 0, running: 0, paused: 1, error: 0 }, 'paused wins over the runs')
  },
  harness.manual,
)
