import t from 'tap'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eachBackend } from './helpers/instance.js'
import { claude, cliAdapters as adapters, cliAgent as agent, wakeAndFinish as wake } from './helpers/cli-agents.js'

// Failures of CLI agents end to end (createInstance + HTTP) against the stand-in CLIs.

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
    const limited = await agent(api, squad.id, 'limited', 'claude_local', {
      command: claude,
      cwd: limitedDir,
      env: { STANDIN_DIR: limitedDir, STANDIN_SEQUENCE: 'rate_limit,success', STANDIN_RESET_EPOCH: String(reset) },
    })
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
    t.same(
      badCodex.body.details.map((d: { path: string }) => d.path),
      ['/adapterConfig/extraArgs'],
    )

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
