import t from 'tap'
import { SignJWT } from 'jose'
import { eachBackend } from './helpers/instance.js'
import { addAgent, addIssue, isError, unknownId } from './helpers/fixtures.js'
import { runHarness } from './helpers/runs.js'

const { adapter, httpish, clock, manual, reset, squadWithAgent, run, drain } = runHarness()

eachBackend(
  t,
  'run tokens: accepted while running, refused after, for another agent, forged or expired; report',
  async (t, api) => {
    reset()
    const s = await squadWithAgent(api)
    const other = await addAgent(api, s.squadId, 'other')
    const issue = await addIssue(api, s.squadId, { title: 'Token' })
    let release!: () => void
    adapter.next = () => new Promise((resolve) => (release = () => resolve({ status: 'succeeded', exitCode: 0 })))
    const r = (await api.call('POST', `/api/agents/${s.agentId}/wake`, { issueId: issue.id })).body.run
    const woken = adapter.woken()
    const d = drain(api)
    const { env } = await woken
    const token = env.SVC_API_KEY!
    t.equal(token.split('.').length, 3, 'a JWT')
    const me = await api.call('GET', '/api/agents/me', undefined, token)
    t.equal(me.body.agent.id, s.agentId, 'accepted as the agent')
    isError(t, await api.call('POST', `/api/issues/${issue.id}/checkout`, { agentId: other.id }, token), 403, 'forbidden', 'not for another agent')
    isError(t, await api.call('GET', '/api/agents/me', undefined, token, { 'x-svc-run-id': unknownId }), 400, 'invalid_payload', 'another run id')
    t.equal((await api.call('POST', `/api/issues/${issue.id}/checkout`, { agentId: s.agentId }, token)).status, 200)
    t.same(
      (await api.call('GET', `/api/heartbeat-runs/${r.id}/issues`)).body.issues.map((i: any) => i.id),
      [issue.id],
    )

    // Report: only with the run's own token.
    isError(t, await api.call('POST', `/api/heartbeat-runs/${r.id}/report`, { liveness: 'advanced' }), 403, 'forbidden', 'operator key')
    isError(t, await api.call('POST', `/api/heartbeat-runs/${r.id}/report`, { liveness: 'advanced' }, s.agentToken), 403, 'forbidden', 'agent key')
    isError(t, await api.call('POST', `/api/heartbeat-runs/${r.id}/report`, { liveness: 'bogus' }, token), 400, 'invalid_payload')
    const rep = await api.call(
      'POST',
      `/api/heartbeat-runs/${r.id}/report`,
      { liveness: 'advanced', summary: 'half way', usage: { model: 'gpt-x', inputTokens: 10, outputTokens: 5, costCents: 3 } },
      token,
    )
    t.match(rep.body.run, { liveness: 'advanced', summary: 'half way', usage: { inputTokens: 10, outputTokens: 5, costCents: 3 }, status: 'running' })

    // Forged: right shape, wrong key.
    const forged = await new SignJWT({ squad: s.squadId })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('slaw')
      .setAudience('slaw-api')
      .setSubject(s.agentId)
      .setJti(r.id)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(new Uint8Array(32).fill(7))
    isError(t, await api.call('GET', '/api/agents/me', undefined, forged), 401, 'unauthorized', 'forged token')
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: s.agentId, jti: r.id, squad: s.squadId })).toString('base64url')}.`
    isError(t, await api.call('GET', '/api/agents/me', undefined, `eyJ${none.slice(3)}x`), 401, 'unauthorized', 'alg none')

    // Expired: past timeout + grace + slack.
    clock.advance((600 + 15 + 61) * 1000)
    isError(t, await api.call('GET', '/api/agents/me', undefined, token), 401, 'unauthorized', 'expired')
    clock.advance(-(600 + 15 + 61) * 1000)
    release()
    await d
    isError(t, await api.call('GET', '/api/agents/me', undefined, token), 401, 'unauthorized', 'refused once the run ended')
    isError(t, await api.call('POST', `/api/heartbeat-runs/${r.id}/report`, { final: true }, token), 401, 'unauthorized')
    const cost = (await api.call('GET', `/api/issues/${issue.id}/cost-summary`)).body.summary
    t.equal(cost.costCents, 3, 'usage is a cost event of the issue')
  },
  manual,
)

eachBackend(
  t,
  'http runs: accepted, finished by the agent with final: true; adapterConfig rules; webhook secret',
  async (t, api) => {
    reset()
    const squad = (await api.call('POST', '/api/squads', { name: 'Http' })).body.squad
    const created = await api.call('POST', `/api/squads/${squad.id}/agents`, { name: 'remote', role: 'r', adapterType: 'http', adapterConfig: { url: 'http://example.invalid/wake', timeoutSec: 30 } })
    t.equal(created.status, 201)
    const secret = created.body.webhookSecret
    t.match(secret, /^slaw_whsec_/, 'the signing secret is shown once')
    const agentId = created.body.agent.id
    t.notOk(JSON.stringify((await api.call('GET', `/api/agents/${agentId}`)).body).includes(secret), 'never again')
    httpish.next = async () => ({ status: 'accepted', httpStatus: 202 })
    const r = (await api.call('POST', `/api/agents/${agentId}/wake`, {})).body.run
    await drain(api)
    t.equal(httpish.calls[0]!.signingSecret, secret, 'the adapter signs with the agent secret')
    t.equal(httpish.calls[0]!.timeoutMs, 30_000)
    t.equal((await run(api, r.id)).status, 'running', 'accepted: running until the agent reports final')
    const token = httpish.calls[0]!.env.SVC_API_KEY!
    const fin = await api.call('POST', `/api/heartbeat-runs/${r.id}/report`, { final: true, error: 'could not build', liveness: 'blocked' }, token)
    t.match(fin.body.run, { status: 'failed', error: 'could not build', liveness: 'blocked' })

    const rotated = await api.call('POST', `/api/agents/${agentId}/webhook-secret/rotate`)
    t.ok(rotated.body.webhookSecret && rotated.body.webhookSecret !== secret, 'rotated')
    await api.call('POST', `/api/agents/${agentId}/wake`, {})
    await drain(api)
    t.equal(httpish.calls[1]!.signingSecret, rotated.body.webhookSecret)
    const second = httpish.calls[1]!
    t.equal((await api.call('POST', `/api/heartbeat-runs/${second.runId}/report`, { final: true }, second.env.SVC_API_KEY)).body.run.status, 'succeeded')

    // adapterConfig: validation, merge, replace, Operator only, never in activity.
    isError(t, await api.call('PATCH', `/api/agents/${agentId}`, { adapterConfig: { env: { '1BAD': 'x' } } }), 400, 'invalid_payload')
    isError(t, await api.call('PATCH', `/api/agents/${agentId}`, { adapterConfig: { env: { SVC_API_KEY: 'x' } } }), 400, 'invalid_payload')
    isError(t, await api.call('PATCH', `/api/agents/${agentId}`, { adapterConfig: { timeoutSec: -1 } }), 400, 'invalid_payload')
    isError(t, await api.call('PATCH', `/api/agents/${agentId}`, { adapterConfig: { env: { X: { type: 'secret_ref', secretId: 'nope', version: 'latest' } } } }), 400, 'invalid_payload')
    const merged = await api.call('PATCH', `/api/agents/${agentId}`, { adapterConfig: { headers: { a: 'b' } } })
    t.same(merged.body.agent.adapterConfig, { url: 'http://example.invalid/wake', timeoutSec: 30, headers: { a: 'b' } }, 'merged')
    const replaced = await api.call('PATCH', `/api/agents/${agentId}`, { adapterConfig: { url: 'http://example.invalid/2' }, replaceAdapterConfig: true })
    t.same(replaced.body.agent.adapterConfig, { url: 'http://example.invalid/2' }, 'replaced')
    const activity = (await api.call('GET', `/api/squads/${squad.id}/activity`)).body
    t.notOk(JSON.stringify(activity).includes('example.invalid'), 'adapterConfig never in activity')

    // A secret_ref that does not resolve fails the run with a sentence, never a value.
    await api.call('PATCH', `/api/agents/${agentId}`, { adapterConfig: { env: { TOKEN: { type: 'secret_ref', secretId: unknownId, version: 'latest' } } } })
    const failing = (await api.call('POST', `/api/agents/${agentId}/wake`, {})).body.run
    await drain(api)
    const failed = await run(api, failing.id)
    t.equal(failed.status, 'failed')
    t.match(failed.error, /adapterConfig\.env\.TOKEN/)
  },
  manual,
)

eachBackend(
  t,
  'retention: old runs and their output go, on the queue',
  async (t, api) => {
    reset()
    const s = await squadWithAgent(api)
    const r = (await api.call('POST', `/api/agents/${s.agentId}/wake`, {})).body.run
    await drain(api)
    t.equal((await run(api, r.id)).outputTail, 'done\n')
    clock.advance(15 * 86_400_000)
    t.match(await api.instance.services.runs.engine.retentionJob(), { outputs: 1, runs: 0 })
    t.equal((await run(api, r.id)).outputTail, null, 'output dropped after 14 days')
    clock.advance(80 * 86_400_000)
    t.match(await api.instance.services.runs.engine.retentionJob(), { runs: 1 })
    isError(t, await api.call('GET', `/api/heartbeat-runs/${r.id}`), 404, 'not_found', 'run deleted after 90 days')
  },
  manual,
)
