import t from 'tap'
import type { AdapterWakeInput, AdapterWakeResult } from '@slaw/core'
import { eachBackend } from './helpers/instance.js'
import { finished, steeredAdapter } from './helpers/runs.js'

// Sessions as the run engine keeps them, with a steered CLI-like adapter: saved only from a
// succeeded run, resumed only under the same agent/adapter/cwd/model, never by two running runs at
// once, forgotten when the CLI does not know it, cleared by reset-session.
const cli = steeredAdapter('claude_local')
const options = () => ({ adapters: [cli, steeredAdapter('process')], runs: { maxConcurrentRunsPerAgent: 2, maxUpstreamRetries: 0 } })

eachBackend(
  t,
  'sessions: saved from success only, one running run per session, forgotten when not found',
  async (t, api) => {
    const squad = (await api.call('POST', '/api/squads', { name: 'Sessions' })).body.squad
    const agent = (await api.call('POST', `/api/squads/${squad.id}/agents`, { name: 'ada', role: 'engineer', adapterType: 'claude_local', adapterConfig: { cwd: '/work', model: 'm1' } })).body.agent
    const issueA = (await api.call('POST', `/api/squads/${squad.id}/issues`, { title: 'A' })).body.issue
    const issueB = (await api.call('POST', `/api/squads/${squad.id}/issues`, { title: 'B' })).body.issue
    const wake = async (issueId?: string) => (await api.call('POST', `/api/agents/${agent.id}/wake`, issueId ? { issueId } : {})).body.run
    const sessions = async () => (await api.call('GET', `/api/agents/${agent.id}/runtime-state`)).body.runtimeState.state.sessions ?? {}

    // A failed run hands back nothing that is saved, even if an adapter tried.
    cli.next = async () => ({ status: 'failed', error: 'boom', errorCode: 'max_turns' })
    const failed = await finished(api.call, (await wake()).id)
    t.match(failed, { status: 'failed', errorCode: 'max_turns' })
    t.same(await sessions(), {}, 'nothing saved from a failed run')

    cli.next = async (input) => ({ status: 'succeeded', session: { id: 'sess-1', key: input.session?.key ?? '' }, summary: 'ok' })
    const ok = await finished(api.call, (await wake()).id)
    t.match(ok, { status: 'succeeded', sessionId: 'sess-1', summary: 'ok' })
    t.same(
      Object.values(await sessions()).map((s: any) => s.sessionId),
      ['sess-1'],
    )

    // Two runs at once (cap 2): only one of them resumes sess-1.
    const held: Array<(r: AdapterWakeResult) => void> = []
    const seen: AdapterWakeInput[] = []
    cli.next = (input) => {
      seen.push(input)
      return new Promise((resolve) => held.push(resolve))
    }
    const a = await wake(issueA.id)
    const b = await wake(issueB.id)
    for (let i = 0; i < 400 && seen.length < 2; i++) await new Promise((r) => setTimeout(r, 25))
    t.equal(seen.length, 2, 'both runs started')
    t.same(seen.map((s) => s.session?.id ?? null).sort(), ['sess-1', null].sort(), 'one resumes the session, the other starts fresh')
    for (const resolve of held) resolve({ status: 'succeeded' })
    await finished(api.call, a.id)
    await finished(api.call, b.id)

    // The CLI did not know the session: it is forgotten.
    cli.next = async (input) => {
      t.equal(input.session?.id, 'sess-1', 'the saved session is offered')
      return { status: 'failed', errorCode: 'session_not_found', error: 'gone', session: null }
    }
    await finished(api.call, (await wake()).id)
    t.same(await sessions(), {}, 'forgotten')

    // Another model is another key; reset-session clears all.
    cli.next = async () => ({ status: 'succeeded', session: { id: 'sess-2', key: '' } })
    await finished(api.call, (await wake()).id)
    await api.call('PATCH', `/api/agents/${agent.id}`, { adapterConfig: { cwd: '/work', model: 'm2' } })
    cli.next = async (input) => {
      t.equal(input.session, null, 'not resumed under another model')
      return { status: 'succeeded' }
    }
    await finished(api.call, (await wake()).id)
    t.equal((await api.call('POST', `/api/agents/${agent.id}/runtime-state/reset-session`)).status, 200)
    t.same(await sessions(), {}, 'reset-session clears every saved session')

    // A reset while a run is running wins over the session that run hands back.
    let release!: (r: AdapterWakeResult) => void
    const inFlight = cli.woken()
    cli.next = () => new Promise((resolve) => (release = resolve))
    const late = await wake()
    await inFlight
    t.equal((await api.call('POST', `/api/agents/${agent.id}/runtime-state/reset-session`)).status, 200)
    release({ status: 'succeeded', session: { id: 'sess-late', key: '' } })
    t.equal((await finished(api.call, late.id)).status, 'succeeded')
    t.same(await sessions(), {}, 'the session of a run that started before the reset is not saved')

    // Usage reported by the agent with an unknown cost stays unknown.
    cli.next = async () => ({
      status: 'succeeded',
      usage: [
        { model: 'x-1', inputTokens: 10, outputTokens: 5, costCents: null },
        { model: 'y-1', inputTokens: 1, outputTokens: 1, costCents: 3, costStatus: 'reported' },
      ],
    })
    const mixed = await finished(api.call, (await wake()).id)
    t.match(mixed.usage, { inputTokens: 11, outputTokens: 6, costCents: 3, costStatus: 'estimated', unpricedTokens: 15 }, 'priced and unpriced parts: estimated, with the unpriced tokens counted')
    cli.next = async () => ({ status: 'succeeded', usage: { model: 'x-1', inputTokens: 10, outputTokens: 5, costCents: null } })
    const unpriced = await finished(api.call, (await wake()).id)
    t.match(unpriced.usage, { costCents: null, costStatus: 'unpriced', unpricedTokens: 15 }, 'a run nobody priced shows null cents, never 0')

    // An agent reporting over HTTP with its run token may say it does not know the cost either.
    cli.next = async () => ({ status: 'accepted', httpStatus: 202 })
    const woken = cli.woken()
    const accepted = await wake()
    const token = (await woken).env.SVC_API_KEY
    t.equal((await woken).runId, accepted.id)
    for (let i = 0; i < 400 && (await api.call('GET', `/api/heartbeat-runs/${accepted.id}`)).body.run.status !== 'running'; i++) await new Promise((r) => setTimeout(r, 25))
    const reported = await api.call(
      'POST',
      `/api/heartbeat-runs/${accepted.id}/report`,
      { final: true, summary: 'done', usage: { model: 'gpt-5-codex', inputTokens: 40, outputTokens: 2, costCents: null, billingType: 'unknown' } },
      token,
    )
    t.equal(reported.status, 200, JSON.stringify(reported.body))
    t.match(reported.body.run, { status: 'succeeded', summary: 'done', usage: { costCents: null, costStatus: 'unpriced', unpricedTokens: 42, billingType: 'unknown' } })
  },
  options,
)

const limited = steeredAdapter('codex_local')
eachBackend(
  t,
  'transient upstream failures are retried with backoff at most maxUpstreamRetries times, never forever',
  async (t, api) => {
    const squad = (await api.call('POST', '/api/squads', { name: 'Retries' })).body.squad
    const agent = (await api.call('POST', `/api/squads/${squad.id}/agents`, { name: 'cody', role: 'engineer', adapterType: 'codex_local', adapterConfig: { cwd: '/work' } })).body.agent
    limited.next = async () => ({ status: 'failed', errorCode: 'transient_upstream', error: 'overloaded' })
    await api.call('POST', `/api/agents/${agent.id}/wake`, {})
    let runs: Array<{ retryAttempt: number; status: string; errorCode: string | null }> = []
    for (let i = 0; i < 400; i++) {
      runs = (await api.call('GET', `/api/squads/${squad.id}/heartbeat-runs?agentId=${agent.id}`)).body.runs
      if (runs.length === 3 && runs.every((r) => r.status === 'failed')) break
      await new Promise((r) => setTimeout(r, 25))
    }
    // Nothing more comes, however long we wait past the last backoff.
    await new Promise((r) => setTimeout(r, 300))
    runs = (await api.call('GET', `/api/squads/${squad.id}/heartbeat-runs?agentId=${agent.id}`)).body.runs
    t.same(
      runs.map((r) => [r.retryAttempt, r.status, r.errorCode]).reverse(),
      [
        [0, 'failed', 'transient_upstream'],
        [1, 'failed', 'transient_upstream'],
        [2, 'failed', 'transient_upstream'],
      ],
      'the first run and two retries, then no more',
    )
  },
  () => ({ adapters: [limited, steeredAdapter('process')], runs: { maxUpstreamRetries: 2, upstreamRetryBaseMs: 20 } }),
)
