import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eachBackend } from './helpers/instance.js'
import { finished } from './helpers/runs.js'
import { calls, claude, cliAdapters as adapters, cliAgent as agent, codex, wakeAndFinish as wake } from './helpers/cli-agents.js'

// claude_local and codex_local end to end (createInstance + HTTP) against the stand-in CLIs.

eachBackend(
  t,
  'claude_local end to end: prompt, summary, usage and cost, the session saved, resumed, lost and reset',
  async (t, api) => {
    await api.instance.listen({ port: 0 })
    const dir = mkdtempSync(join(tmpdir(), 'slaw-claude-e2e-'))
    const squad = (await api.call('POST', '/api/squads', { name: 'CLI agents' })).body.squad
    const ada = await agent(api, squad.id, 'ada', 'claude_local', { command: claude, cwd: dir, model: 'claude-sonnet-4-5', env: { STANDIN_DIR: dir } })
    await api.call('PATCH', `/api/agents/${ada.id}`, { prompt: 'You are ada, the backend engineer.' })
    const issue = (await api.call('POST', `/api/squads/${squad.id}/issues`, { title: 'Fix the login bug', description: 'Users cannot log in.', assigneeAgentId: ada.id })).body.issue
    const queued = (await api.call('GET', `/api/issues/${issue.id}/runs`)).body.runs
    const run = await finished(api.call, queued[0].id)
    t.equal(run.status, 'succeeded', run.error ?? '')
    t.equal(run.summary, 'Fixed the bug and commented on the issue.', "the summary is the CLI's final text")
    t.match(
      run.usage,
      {
        inputTokens: 1500,
        cachedInputTokens: 30000,
        cacheWriteTokens: 2000,
        outputTokens: 800,
        costCents: 12,
        costStatus: 'reported',
        unpricedTokens: 0,
        provider: 'anthropic',
        billingType: 'subscription_included',
      },
      'per-model usage summed, cost as reported',
    )
    t.equal(run.errorCode, null)
    t.ok(run.sessionId, 'the run names its session')
    const [first] = calls(dir)
    t.match(first!.stdin, new RegExp(`${issue.identifier}: Fix the login bug`), 'the prompt names the issue')
    t.ok(first!.argv.includes('You are ada, the backend engineer.'), "the agent's prompt is the system prompt")
    t.equal(first!.env.SVC_RUN_ID, run.id, 'the wake environment reaches the CLI')
    const events = (await api.call('GET', `/api/squads/${squad.id}/costs/by-agent`)).body.agents
    t.same(
      events.map((a: { agentId: string; costCents: number; events: number }) => [a.agentId, a.costCents, a.events]),
      [[ada.id, 12, 2]],
      'one cost event per model',
    )

    const state = (await api.call('GET', `/api/agents/${ada.id}/runtime-state`)).body.runtimeState
    const saved = Object.values(state.state.sessions as Record<string, { sessionId: string; adapterType: string; cwd: string; model: string }>)
    t.same(
      saved.map((s) => [s.sessionId, s.adapterType, s.cwd, s.model]),
      [[run.sessionId, 'claude_local', dir, 'claude-sonnet-4-5']],
      'saved under agent, adapter type, cwd and model',
    )

    const second = await wake(api, ada.id, issue.id)
    t.equal(second.status, 'succeeded')
    t.same(calls(dir)[1]!.argv.slice(5, 7), ['--resume', run.sessionId], 'the second wake resumes the session')
    t.equal(second.sessionId, run.sessionId)

    // The CLI forgot the session (another machine, expired): the run retries once, fresh, and saves the new one.
    rmSync(join(dir, 'sessions.json'))
    const third = await wake(api, ada.id, issue.id)
    t.equal(third.status, 'succeeded', third.error ?? '')
    const all = calls(dir)
    t.ok(all[2]!.argv.includes('--resume') && !all[3]!.argv.includes('--resume'), 'resumed first, then fresh')
    t.not(third.sessionId, run.sessionId)
    const after = (await api.call('GET', `/api/agents/${ada.id}/runtime-state`)).body.runtimeState
    t.same(
      Object.values(after.state.sessions).map((s: any) => s.sessionId),
      [third.sessionId],
      'the new session replaced the lost one',
    )

    // A different model is another key: no resume.
    await api.call('PATCH', `/api/agents/${ada.id}`, { adapterConfig: { command: claude, cwd: dir, model: 'claude-opus-4-1', env: { STANDIN_DIR: dir } } })
    await wake(api, ada.id)
    t.notOk(calls(dir)[4]!.argv.includes('--resume'), 'a session resumes only when agent, adapter, cwd and model all match')

    t.equal((await api.call('POST', `/api/agents/${ada.id}/runtime-state/reset-session`)).status, 200)
    await api.call('PATCH', `/api/agents/${ada.id}`, { adapterConfig: { command: claude, cwd: dir, model: 'claude-sonnet-4-5', env: { STANDIN_DIR: dir } } })
    await wake(api, ada.id)
    t.notOk(calls(dir)[5]!.argv.includes('--resume'), 'after reset-session the next wake starts fresh')

    const check = await api.call('POST', `/api/agents/${ada.id}/check-environment`)
    t.equal(check.status, 200)
    t.same(
      check.body.environment.checks.slice(0, 3).map((c: { name: string; status: string }) => [c.name, c.status]),
      [
        ['cwd', 'ok'],
        ['command', 'ok'],
        ['version', 'ok'],
      ],
    )
  },
  adapters,
)

eachBackend(
  t,
  'codex_local end to end: unpriced tokens are never 0 cents, costs show them apart, a token ceiling stops new runs',
  async (t, api) => {
    await api.instance.listen({ port: 0 })
    const dir = mkdtempSync(join(tmpdir(), 'slaw-codex-e2e-'))
    const squad = (await api.call('POST', '/api/squads', { name: 'Codex' })).body.squad
    const cody = await agent(api, squad.id, 'cody', 'codex_local', { command: codex, cwd: dir, model: 'gpt-5-codex', env: { STANDIN_DIR: dir } })
    const run = await wake(api, cody.id)
    t.equal(run.status, 'succeeded', run.error ?? '')
    t.equal(run.summary, 'Implemented the endpoint and commented on the issue.')
    t.match(run.usage, { inputTokens: 4000, cachedInputTokens: 20000, outputTokens: 1200, costCents: null, costStatus: 'unpriced', unpricedTokens: 25200, provider: 'openai', billingType: 'unknown' })
    const summary = (await api.call('GET', `/api/squads/${squad.id}/costs/summary`)).body.summary
    t.match(summary, { costCents: 0, inputTokens: 4000, cachedInputTokens: 20000, outputTokens: 1200, unpricedTokens: 25200, events: 1 }, 'tokens beside cents, unpriced tokens apart')
    const dashboard = (await api.call('GET', `/api/squads/${squad.id}/dashboard`)).body
    t.match(dashboard.costs, { monthSpendCents: 0, monthUnpricedTokens: 25200, monthInputTokens: 4000 })
    const events = (await api.call('GET', `/api/squads/${squad.id}/activity?action=cost.recorded`)).body
    void events

    const second = await wake(api, cody.id)
    t.same(calls(dir)[1]!.argv, ['exec', '--json', '--model', 'gpt-5-codex', 'resume', run.sessionId, '-'], 'the thread is resumed')
    t.equal(second.status, 'succeeded')

    // A token ceiling: unpriced tokens count, the agent is stopped, a new wake is refused.
    await api.call('PATCH', `/api/agents/${cody.id}/budgets`, { budgetMonthlyCents: null, budgetMonthlyTokens: 60_000 })
    const third = await wake(api, cody.id)
    t.equal(third.status, 'succeeded')
    const paused = (await api.call('GET', `/api/agents/${cody.id}`)).body.agent
    t.equal(paused.pauseReason, 'budget', 'past its token ceiling the agent is paused')
    const refused = await api.call('POST', `/api/agents/${cody.id}/wake`, {})
    t.equal(refused.status, 409, 'and no new run starts')
  },
  adapters,
)
