import t from 'tap'
import { queueWake, type AdapterWakeInput } from '@slaw/core'
import { eachBackend } from './helpers/instance.js'
import { addAgent, addIssue, isError, unknownId } from './helpers/fixtures.js'
import { runHarness } from './helpers/runs.js'

const { adapter, clock, manual, reset, squadWithAgent, run, drain } = runHarness()

eachBackend(
  t,
  'manual wake, run record, lists, cancel',
  async (t, api) => {
    reset()
    const s = await squadWithAgent(api)
    const issue = await addIssue(api, s.squadId, { title: 'Manual' })
    const woke = await api.call('POST', `/api/agents/${s.agentId}/wake`, { reason: 'look at this', issueId: issue.id })
    t.equal(woke.status, 202)
    t.match(woke.body.run, {
      agentId: s.agentId,
      squadId: s.squadId,
      issueId: issue.id,
      reason: 'look at this',
      status: 'queued',
      liveness: null,
      exitCode: null,
      error: null,
      usage: { inputTokens: 0, outputTokens: 0, costCents: 0 },
    })
    const again = await api.call('POST', `/api/agents/${s.agentId}/wake`, { issueId: issue.id })
    t.equal(again.body.run.id, woke.body.run.id, 'a second wake folds into the queued run')
    t.equal(again.body.run.coalescedCount, 1)

    t.equal(await drain(api), 1, 'one job ran')
    const done = await run(api, woke.body.run.id)
    t.match(done, { status: 'succeeded', exitCode: 0, outputTail: 'done\n', error: null })
    t.ok(done.startedAt && done.finishedAt)
    const env = adapter.calls[0]!.env
    // This instance answers inject() only and has no publicUrl: no SVC_API_URL rather than an address nothing serves.
    t.same(Object.keys(env).sort(), ['SVC_AGENT_ID', 'SVC_API_KEY', 'SVC_RUN_ID', 'SVC_SQUAD_ID', 'SVC_TASK_ID', 'SVC_WAKE_REASON'], 'exactly the wake variables')
    t.equal(env.SVC_TASK_ID, issue.id)
    t.equal(adapter.calls[0]!.timeoutMs, 600_000, 'default timeoutSec 600')
    t.equal(adapter.calls[0]!.graceMs, 15_000, 'default graceSec 15')

    // Lists: newest first, filters, cursor.
    await api.call('POST', `/api/agents/${s.agentId}/wake`, {})
    await api.call('POST', `/api/agents/${s.agentId}/wake`, { issueId: issue.id })
    const all = (await api.call('GET', `/api/squads/${s.squadId}/heartbeat-runs`)).body
    t.equal(all.runs.length, 3)
    t.equal(all.nextCursor, null)
    t.ok(all.runs[0].id > all.runs[1].id, 'newest first')
    const page1 = (await api.call('GET', `/api/squads/${s.squadId}/heartbeat-runs?limit=2`)).body
    t.equal(page1.runs.length, 2)
    const page2 = (await api.call('GET', `/api/squads/${s.squadId}/heartbeat-runs?limit=2&cursor=${page1.nextCursor}`)).body
    t.same(
      page2.runs.map((r: any) => r.id),
      [all.runs[2].id],
      'cursor continues',
    )
    t.equal((await api.call('GET', `/api/squads/${s.squadId}/heartbeat-runs?status=succeeded`)).body.runs.length, 1)
    t.equal((await api.call('GET', `/api/squads/${s.squadId}/heartbeat-runs?status=queued&agentId=${s.agentId}`)).body.runs.length, 2)
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/heartbeat-runs?status=bogus`), 400, 'invalid_payload')
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/heartbeat-runs?cursor=nope`), 400, 'invalid_payload')

    // Cancel: a queued run, then a finished one.
    const queued = all.runs[0]
    const cancelled = await api.call('POST', `/api/heartbeat-runs/${queued.id}/cancel`)
    t.match(cancelled.body.run, { status: 'cancelled', error: 'Cancelled by an Operator.' })
    isError(t, await api.call('POST', `/api/heartbeat-runs/${queued.id}/cancel`), 422, 'invalid_state')
    isError(t, await api.call('POST', `/api/heartbeat-runs/${queued.id}/cancel`, undefined, s.agentToken), 403, 'forbidden')
    isError(t, await api.call('GET', '/api/heartbeat-runs/not-a-uuid'), 404, 'not_found')
    isError(t, await api.call('GET', `/api/heartbeat-runs/${unknownId}`), 404, 'not_found')
    isError(t, await api.call('POST', `/api/agents/${unknownId}/wake`, {}), 404, 'not_found')
    isError(t, await api.call('POST', `/api/agents/${s.agentId}/wake`, { issueId: unknownId }), 400, 'invalid_payload')

    // Another squad's agent key sees none of it.
    const other = await squadWithAgent(api, 'zed')
    isError(t, await api.call('GET', `/api/heartbeat-runs/${queued.id}`, undefined, other.agentToken), 404, 'not_found')
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/heartbeat-runs`, undefined, other.agentToken), 404, 'not_found')
    t.same((await api.call('GET', `/api/heartbeat-runs/${queued.id}/issues`, undefined, other.agentToken)).body.issues, [])

    // Runtime state over the same data.
    const state = (await api.call('GET', `/api/agents/${s.agentId}/runtime-state`)).body.runtimeState
    t.equal(state.queuedRuns, 1)
    t.equal(state.lastRun.status, 'cancelled')
    t.same(state.runningRuns, [])
    t.equal((await api.call('POST', `/api/agents/${s.agentId}/runtime-state/reset-session`)).status, 200)
  },
  manual,
)

eachBackend(
  t,
  'gates: manual wakes answer 409, event wakes become cancelled runs naming the gate',
  async (t, api) => {
    reset()
    const s = await squadWithAgent(api)
    // An event wake (assignment), then the agent is paused before a node picks it up.
    const issue = await addIssue(api, s.squadId, { title: 'Gated', assigneeAgentId: s.agentId })
    t.equal((await api.call('POST', `/api/agents/${s.agentId}/pause`)).status, 200)
    isError(t, await api.call('POST', `/api/agents/${s.agentId}/wake`, {}), 409, 'agent_not_active', 'paused agent')
    await drain(api)
    const [gated] = (await api.call('GET', `/api/issues/${issue.id}/runs`)).body.runs
    t.equal(gated.status, 'cancelled')
    t.match(gated.error, /^agent_not_active: /, 'the error names the gate')
    t.equal(adapter.calls.length, 0, 'the adapter was never called')

    // Terminated: never woken.
    await api.call('POST', `/api/agents/${s.agentId}/terminate`)
    isError(t, await api.call('POST', `/api/agents/${s.agentId}/wake`, {}), 409, 'agent_not_active', 'terminated agent')
    await api.instance.storage.transaction((tx) => queueWake(tx, { squadId: s.squadId, agentId: s.agentId, issueId: null, reason: 'manual' }))
    await drain(api)
    const runs = (await api.call('GET', `/api/squads/${s.squadId}/heartbeat-runs?agentId=${s.agentId}&status=cancelled`)).body.runs
    t.match(runs[0].error, /agent_not_active: The agent is terminated/)

    // Project paused, budget hard stop, squad archived.
    const b = await squadWithAgent(api, 'bob')
    const project = (await api.call('POST', `/api/squads/${b.squadId}/projects`, { name: 'P' })).body.project
    const inProject = await addIssue(api, b.squadId, { title: 'In project', projectId: project.id })
    t.equal((await api.call('PATCH', `/api/projects/${project.id}`, { pauseReason: 'manual' })).status, 200)
    isError(t, await api.call('POST', `/api/agents/${b.agentId}/wake`, { issueId: inProject.id }), 409, 'project_paused')
    t.equal((await api.call('PATCH', `/api/squads/${b.squadId}/budgets`, { budgetMonthlyCents: 100, budgetHardStop: true })).status, 200)
    t.equal((await api.call('POST', `/api/squads/${b.squadId}/cost-events`, { agentId: b.agentId, model: 'm', inputTokens: 1, outputTokens: 1, costCents: 150 })).status, 201)
    isError(t, await api.call('POST', `/api/agents/${b.agentId}/wake`, {}), 409, 'budget_exhausted')
    await api.call('POST', `/api/squads/${b.squadId}/archive`)
    isError(t, await api.call('POST', `/api/agents/${b.agentId}/wake`, {}), 409, 'agent_not_active', 'archive paused the agents')
  },
  manual,
)

eachBackend(
  t,
  'wake storm: 1,000 comments mentioning an agent leave one queued run per agent and issue',
  async (t, api) => {
    reset()
    const s = await squadWithAgent(api)
    const bob = await addAgent(api, s.squadId, 'Bob Stone')
    const issue = await addIssue(api, s.squadId, { title: 'Storm' })
    // Through HTTP: concurrent comments, each mentioning both agents.
    const res = await Promise.all(Array.from({ length: 50 }, (_, i) => api.call('POST', `/api/issues/${issue.id}/comments`, { body: `ping ${i} @ada and @[Bob Stone]` })))
    t.ok(res.every((r) => r.status === 201))
    // And the rest through the service layer, in their own transactions.
    for (let i = 0; i < 950; i++) {
      await api.instance.storage.transaction((tx) => queueWake(tx, { squadId: s.squadId, agentId: s.agentId, issueId: issue.id, reason: 'mention', commentId: null }))
    }
    const runs = (await api.call('GET', `/api/squads/${s.squadId}/heartbeat-runs?status=queued`)).body.runs
    t.equal(runs.length, 2, 'one queued run for each agent on the issue')
    const ada = runs.find((r: any) => r.agentId === s.agentId)
    t.equal(ada.coalescedCount, 999, 'every other wake folded in')
    t.ok(ada.commentId, 'the run carries a wake comment id')
    t.ok(
      runs.some((r: any) => r.agentId === bob.id),
      '@[Full Name] mentions work',
    )
    t.equal((await api.instance.storage.jobs.claim(['heartbeat_run'], 'probe', 1, 100, clock.now())).length, 2, 'two jobs, not a thousand')
    // Self-mention and unknown names wake nobody.
    await api.call('POST', `/api/issues/${issue.id}/comments`, { body: 'me: @ada, and @nobody' }, s.agentToken)
  },
  manual,
)

eachBackend(
  t,
  'wake causes: children done wakes the parent assignee; approval decided wakes the requester; interaction answer wakes the assignee',
  async (t, api) => {
    reset()
    const s = await squadWithAgent(api)
    const worker = await addAgent(api, s.squadId, 'worker')
    const parent = await addIssue(api, s.squadId, { title: 'Parent', assigneeAgentId: s.agentId })
    const c1 = await addIssue(api, s.squadId, { title: 'C1', parentId: parent.id, assigneeAgentId: worker.id })
    const c2 = await addIssue(api, s.squadId, { title: 'C2', parentId: parent.id })
    await drain(api)
    const parentRuns = async () => (await api.call('GET', `/api/issues/${parent.id}/runs`)).body.runs.filter((r: any) => r.reason === 'children_done')
    await api.call('PATCH', `/api/issues/${c1.id}`, { status: 'done' })
    t.equal((await parentRuns()).length, 0, 'one child still open')
    await api.call('PATCH', `/api/issues/${c2.id}`, { status: 'cancelled' })
    const [cd] = await parentRuns()
    t.match(cd, { agentId: s.agentId, status: 'queued' }, 'all children finished: the parent assignee is woken')

    const hire = await api.call('POST', `/api/squads/${s.squadId}/agent-hires`, { name: 'newbie', role: 'qa', adapterConfig: { timeoutSec: 30 } }, worker.token)
    t.equal(hire.status, 202, JSON.stringify(hire.body))
    const approvalId = hire.body.approval?.id ?? hire.body.approvalId
    t.notOk(JSON.stringify(hire.body).includes('timeoutSec'), 'adapterConfig is not shown in the approval')
    const asOperator = (await api.call('GET', `/api/approvals/${approvalId}`)).body.approval
    t.same(asOperator.payload.adapterConfig, { timeoutSec: 30 }, 'the Operator who decides the hire sees the config the hired agent would run')
    const asAgent = (await api.call('GET', `/api/approvals/${approvalId}`, undefined, worker.token)).body.approval
    t.equal(asAgent.payload.adapterConfig, undefined, 'agents never see it')
    const listed = (await api.call('GET', `/api/squads/${s.squadId}/approvals`)).body.approvals.find((a: any) => a.id === approvalId)
    t.same(listed.payload.adapterConfig, { timeoutSec: 30 }, "in the Operator's list too")
    t.equal((await api.call('POST', `/api/approvals/${approvalId}/approve`, {})).status, 200)
    const workerRuns = (await api.call('GET', `/api/squads/${s.squadId}/heartbeat-runs?agentId=${worker.id}`)).body.runs
    t.ok(
      workerRuns.some((r: any) => r.reason === 'approval_decided' && r.approvalId === approvalId),
      'requester woken with SVC_APPROVAL_ID',
    )
    await drain(api)
    const env = adapter.calls.find((c: AdapterWakeInput) => c.reason === 'approval_decided')!.env
    t.equal(env.SVC_APPROVAL_ID, approvalId)
    const hired = (await api.call('GET', `/api/squads/${s.squadId}/agents`)).body.agents.find((a: any) => a.name === 'newbie')
    t.same((await api.call('GET', `/api/agents/${hired.id}`)).body.agent.adapterConfig, { timeoutSec: 30 }, 'the hire carries its adapterConfig')
  },
  manual,
)
