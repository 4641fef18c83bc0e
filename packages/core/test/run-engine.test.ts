import t from 'tap'
import { eachBackend } from './helpers/instance.js'
import { addIssue, outboxOnce } from './helpers/fixtures.js'
import { runHarness, untilAborted } from './helpers/runs.js'

const { adapter, clock, manual, reset, squadWithAgent, run, drain } = runHarness()

eachBackend(
  t,
  'caps: one run per agent by default; a wake over the cap stays queued until the slot frees',
  async (t, api) => {
    reset()
    const s = await squadWithAgent(api)
    const i1 = await addIssue(api, s.squadId, { title: 'One' })
    const i2 = await addIssue(api, s.squadId, { title: 'Two' })
    const r1 = (await api.call('POST', `/api/agents/${s.agentId}/wake`, { issueId: i1.id })).body.run
    let release!: () => void
    adapter.next = () => new Promise((resolve) => (release = () => resolve({ status: 'succeeded', exitCode: 0 })))
    const woken = adapter.woken()
    const first = drain(api)
    await woken
    const r2 = (await api.call('POST', `/api/agents/${s.agentId}/wake`, { issueId: i2.id })).body.run
    t.equal(await api.instance.jobs.drain(), 1, 'the second run was tried')
    t.equal((await run(api, r2.id)).status, 'queued', 'over the cap: still queued')
    t.equal((await run(api, r1.id)).status, 'running')
    const state = (await api.call('GET', `/api/agents/${s.agentId}/runtime-state`)).body.runtimeState
    t.same(
      state.runningRuns.map((r: any) => r.id),
      [r1.id],
    )
    adapter.next = async () => ({ status: 'succeeded', exitCode: 0 })
    release()
    await first
    await drain(api)
    t.equal((await run(api, r2.id)).status, 'succeeded', 'ran once the slot freed')
  },
  manual,
)

eachBackend(
  t,
  'deadlines, node loss, cancel of a running run, continuations',
  async (t, api) => {
    reset()
    const s = await squadWithAgent(api)
    // A hung adapter: the deadline job ends the run timed_out and the adapter is told to stop.
    adapter.next = untilAborted
    const hung = (await api.call('POST', `/api/agents/${s.agentId}/wake`, {})).body.run
    const woken = adapter.woken()
    const running = drain(api)
    const input = await woken
    clock.advance((600 + 15) * 1000 + 1)
    await drain(api)
    await running
    const timedOut = await run(api, hung.id)
    t.match(timedOut, { status: 'timed_out' })
    t.ok(input.signal.aborted, 'the adapter was aborted')
    const dash = (await api.call('GET', `/api/squads/${s.squadId}/dashboard`)).body
    const days = dash.dashboard?.runActivity ?? dash.runActivity
    t.equal(
      days.reduce((n: number, d: any) => n + d.failed, 0),
      1,
      'timed_out counts as failed',
    )
    const facts = await outboxOnce(api.instance.storage, (rows) => rows.some((f) => f.entityId === hung.id && f.payload.status !== 'running' && f.payload.status !== 'queued'))
    t.equal(facts.filter((f) => f.entityId === hung.id).pop()!.payload.status, 'failed', 'timed_out is sent to the tower as failed')

    // A node that died mid-run: its lease runs out, the job is claimed again, the run ends node_lost.
    const lost = (await api.call('POST', `/api/agents/${s.agentId}/wake`, {})).body.run
    const [job] = await api.instance.storage.jobs.claim(['heartbeat_run'], 'dead-node', 60_000, 1, clock.now())
    t.ok(job)
    await api.instance.storage.transaction((tx) =>
      tx.heartbeatRuns.start(lost.id, { nodeId: 'dead-node', startedAt: clock.now(), deadlineAt: new Date(clock.now().getTime() + 3_600_000) }, { perAgent: 1, perSquad: null, perInstance: null }),
    )
    t.equal(await drain(api), 0, 'the lease still holds')
    clock.advance(60_001)
    await drain(api)
    t.match(await run(api, lost.id), { status: 'timed_out', error: 'node_lost' })

    // Cancel while running: the adapter is aborted, the run ends cancelled.
    adapter.next = untilAborted
    const long = (await api.call('POST', `/api/agents/${s.agentId}/wake`, {})).body.run
    const woken2 = adapter.woken()
    const d2 = drain(api)
    const input2 = await woken2
    t.equal((await api.call('POST', `/api/heartbeat-runs/${long.id}/cancel`)).body.run.status, 'cancelled')
    await d2
    t.ok(input2.signal.aborted)
    t.match(await run(api, long.id), { status: 'cancelled', error: 'Cancelled by an Operator.' })

    // Continuations: only plan_only / empty_response, at most maxContinuations (2 here) in a row.
    adapter.next = async () => ({ status: 'succeeded', exitCode: 0, liveness: 'plan_only' })
    const issue = await addIssue(api, s.squadId, { title: 'Plan' })
    await api.call('POST', `/api/agents/${s.agentId}/wake`, { issueId: issue.id })
    await drain(api)
    const chain = (await api.call('GET', `/api/issues/${issue.id}/runs`)).body.runs
    t.same(
      chain.map((r: any) => [r.reason, r.continuationDepth, r.status]).reverse(),
      [
        ['manual', 0, 'succeeded'],
        ['continuation', 1, 'succeeded'],
        ['continuation', 2, 'succeeded'],
      ],
      'bounded chain',
    )
    adapter.next = async () => ({ status: 'succeeded', exitCode: 0, liveness: 'completed' })
    const i2 = await addIssue(api, s.squadId, { title: 'Done' })
    await api.call('POST', `/api/agents/${s.agentId}/wake`, { issueId: i2.id })
    await drain(api)
    t.equal((await api.call('GET', `/api/issues/${i2.id}/runs`)).body.runs.length, 1, 'completed: no continuation')
  },
  manual,
)
