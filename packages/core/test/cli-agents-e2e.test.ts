import t from 'tap'
import { fileURLToPath } from 'node:url'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { processAdapter } from '@slaw/adapters'
import { claudeAdapter } from '@slaw/adapter-claude'
import { codexAdapter } from '@slaw/adapter-codex'
import { eachBackend, type TestApi } from './helpers/instance.js'
import { finished } from './helpers/runs.js'

// The real claude_local and codex_local adapters, driven end to end (createInstance + HTTP) against
// the stand-in CLIs of their packages, which replay recorded event streams.
const claude = fileURLToPath(new URL('../../adapter-claude/test/fixtures/claude', import.meta.url))
const codex = fileURLToPath(new URL('../../adapter-codex/test/fixtures/codex', import.meta.url))
const adapters = () => ({ adapters: [processAdapter(), claudeAdapter({ lingerMs: 200 }), codexAdapter()], runs: { upstreamRetryBaseMs: 1_000 } })

const calls = (dir: string): Array<{ argv: string[]; stdin: string; env: Record<string, string> }> => {
  try {
    return readFileSync(join(dir, 'calls.jsonl'), 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l))
  } catch {
    return []
  }
}

async function agent(api: TestApi, squadId: string, name: string, adapterType: string, adapterConfig: Record<string, unknown>): Promise<{ id: string }> {
  const res = await api.call('POST', `/api/squads/${squadId}/agents`, { name, role: 'software_engineer', adapterType, adapterConfig })
  if (res.status !== 201) throw new Error(`agent: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.agent
}

async function wake(api: TestApi, agentId: string, issueId?: string): Promise<any> {
  const res = await api.call('POST', `/api/agents/${agentId}/wake`, issueId ? { issueId } : {})
  if (res.status !== 202) throw new Error(`wake: ${res.status} ${JSON.stringify(res.body)}`)
  return finished(api.call, res.body.run.id)
}

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
    t.match(run.usage, { inputTokens: 1500, cachedInputTokens: 30000, cacheWriteTokens: 2000, outputTokens: 800, costCents: 12, costStatus: 'reported', unpricedTokens: 0, provider: 'anthropic', billingType: 'subscription_included' }, 'per-model usage summed, cost as reported')
    t.equal(run.errorCode, null)
    t.ok(run.sessionId, 'the run names its session')
    const [first] = calls(dir)
    t.match(first!.stdin, new RegExp(`${issue.identifier}: Fix the login bug`), 'the prompt names the issue')
    t.ok(first!.argv.includes('You are ada, the backend engineer.'), "the agent's prompt is the system prompt")
    t.equal(first!.env.SVC_RUN_ID, run.id, 'the wake environment reaches the CLI')
    const events = (await api.call('GET', `/api/squads/${squad.id}/costs/by-agent`)).body.agents
    t.same(events.map((a: { agentId: string; costCents: number; events: number }) => [a.agentId, a.costCents, a.events]), [[ada.id, 12, 2]], 'one cost event per model')

    const state = (await api.call('GET', `/api/agents/${ada.id}/runtime-state`)).body.runtimeState
    const saved = Object.values(state.state.sessions as Record<string, { sessionId: string; adapterType: string; cwd: string; model: string }>)
    t.same(saved.map((s) => [s.sessionId, s.adapterType, s.cwd, s.model]), [[run.sessionId, 'claude_local', dir, 'claude-sonnet-4-5']], 'saved under agent, adapter type, cwd and model')

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
    t.same(Object.values(after.state.sessions).map((s: any) => s.sessionId), [third.sessionId], 'the new session replaced the lost one')

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
    t.same(check.body.environment.checks.slice(0, 3).map((c: { name: string; status: string }) => [c.name, c.status]), [['cwd', 'ok'], ['command', 'ok'], ['version', 'ok']])
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

eachBackend(
  t,
  'errors of CLI agents: not logged in, a rate limit retried at its reset time, bad config, no environment check',
  async (t, api) => {
    await api.instance.listen({ port: 0 })
    const squad = (await api.call('POST', '/api/squads', { name: 'Errors' })).body.squad
    const dir = mkdtempSync(join(tmpdir(), 'slaw-cli-errors-'))
    const noLogin = await agent(api, squad.id, 'nologin', 'claude_local', { command: claude, cwd: dir, env: { STANDIN_DIR: dir, STANDIN_SCENARIO: 'not_logged_in' } })
    const failed = await wake(api, noLogin.id)
    t.match(failed, { status: 'failed', errorCode: 'auth_required', retryNotBefore: null, sessionId: null })
    t.match(failed.error, /not logged in/i)

    const limitedDir = mkdtempSync(join(tmpdir(), 'slaw-cli-limit-'))
    const reset = Math.floor(Date.now() / 1000) + 3
    const limited = await agent(api, squad.id, 'limited', 'claude_local', { command: claude, cwd: limitedDir, env: { STANDIN_DIR: limitedDir, STANDIN_SEQUENCE: 'rate_limit,success', STANDIN_RESET_EPOCH: String(reset) } })
    const first = await wake(api, limited.id)
    t.match(first, { status: 'failed', errorCode: 'transient_upstream', retryAttempt: 0 })
    t.equal(new Date(first.retryNotBefore).getTime(), reset * 1000, 'retryNotBefore is the reset time the CLI named')
    let retry: any
    for (let i = 0; i < 400 && !retry; i++) {
      const runs = (await api.call('GET', `/api/squads/${squad.id}/heartbeat-runs?agentId=${limited.id}`)).body.runs
      retry = runs.find((r: { retryAttempt: number; status: string }) => r.retryAttempt === 1 && r.status !== 'queued' && r.status !== 'running')
      if (!retry) await new Promise((r) => setTimeout(r, 50))
    }
    t.ok(retry, 'the job queue retried the run')
    t.equal(retry.status, 'succeeded')
    t.ok(new Date(retry.startedAt).getTime() >= reset * 1000, 'not before the reset time')

    const bad = await api.call('POST', `/api/squads/${squad.id}/agents`, { name: 'bad', role: 'x', adapterType: 'claude_local', adapterConfig: { model: 7, maxTurns: 0 } })
    t.equal(bad.status, 400)
    t.same(bad.body.details.map((d: { path: string }) => d.path).sort(), ['/adapterConfig/cwd', '/adapterConfig/maxTurns', '/adapterConfig/model'])
    const badCodex = await api.call('POST', `/api/squads/${squad.id}/agents`, { name: 'badc', role: 'x', adapterType: 'codex_local', adapterConfig: { cwd: dir, extraArgs: 'x' } })
    t.equal(badCodex.status, 400)
    t.same(badCodex.body.details.map((d: { path: string }) => d.path), ['/adapterConfig/extraArgs'])

    const proc = await agent(api, squad.id, 'proc', 'process', { command: process.execPath })
    const none = await api.call('POST', `/api/agents/${proc.id}/check-environment`)
    t.equal(none.status, 422, 'an adapter without an environment check answers 4xx')
    const { agentToken } = await api.seed('Other')
    const asAgent = await api.call('POST', `/api/agents/${noLogin.id}/check-environment`, undefined, agentToken)
    t.ok(asAgent.status === 403 || asAgent.status === 404, 'Operator only')

    const missing = await agent(api, squad.id, 'missing', 'codex_local', { command: join(dir, 'no-such-codex'), cwd: dir })
    const notFound = await wake(api, missing.id)
    t.match(notFound, { status: 'failed', errorCode: 'command_not_found' }, 'a missing CLI fails the run, nothing crashes')
  },
  adapters,
)
