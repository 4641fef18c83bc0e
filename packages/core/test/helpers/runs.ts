import type { AdapterWakeInput, AdapterWakeResult, AgentAdapter, InstanceOptions } from '@slaw/core'
import { addAgent } from './fixtures.js'
import type { TestApi } from './instance.js'

/**
 * A test adapter the test steers: every wake is recorded and answered by `next`, which a test
 * replaces (a result, or a promise it resolves later to hold the run in `running`).
 */
export interface SteeredAdapter extends AgentAdapter {
  calls: AdapterWakeInput[]
  next: (input: AdapterWakeInput) => Promise<AdapterWakeResult>
  /** Resolves with the next wake's input. */
  woken(): Promise<AdapterWakeInput>
}

export function steeredAdapter(type = 'process'): SteeredAdapter {
  let waiters: Array<(i: AdapterWakeInput) => void> = []
  const adapter: SteeredAdapter = {
    type,
    calls: [],
    next: async () => ({ status: 'succeeded', exitCode: 0, output: 'done\n' }),
    woken: () => new Promise((resolve) => waiters.push(resolve)),
    async wake(input) {
      adapter.calls.push(input)
      const w = waiters
      waiters = []
      for (const resolve of w) resolve(input)
      return adapter.next(input)
    },
  }
  return adapter
}

/** An adapter answer that waits until the run's signal aborts (cancel, deadline), then says so. */
export function untilAborted(input: AdapterWakeInput): Promise<AdapterWakeResult> {
  return new Promise((resolve) => {
    const done = () => resolve({ status: 'cancelled', error: `stopped: ${String((input.signal.reason as Error | undefined)?.message ?? 'aborted')}` })
    if (input.signal.aborted) done()
    else input.signal.addEventListener('abort', done, { once: true })
  })
}

/**
 * A clock a test moves by hand. It starts an hour ahead of the database's own clock, so rows the
 * database stamps with now() (a queued job's run_at) are always due on it; from there only the
 * test moves it.
 */
export function fakeClock(start = Date.now() + 3_600_000) {
  let t = start
  return {
    now: () => new Date(t),
    advance(ms: number) {
      t += ms
    },
    set(ms: number) {
      t = ms
    },
    /** Back to an hour ahead of the system clock. */
    reset() {
      t = Date.now() + 3_600_000
    },
  }
}

/** Polls the run until it leaves queued/running (bounded by the test's own timeout, not a margin). */
export async function finished(call: (m: string, u: string) => Promise<{ body: any }>, runId: string): Promise<any> {
  for (;;) {
    const run = (await call('GET', `/api/heartbeat-runs/${runId}`)).body.run
    if (run && run.status !== 'queued' && run.status !== 'running') return run
    await new Promise((r) => setTimeout(r, 20))
  }
}

/**
 * What the run engine's test files share: a steered process adapter and an http one, a fake clock,
 * instance options using them (and `manual`, with no job runner, so every step is an explicit
 * trigger), and small helpers.
 */
export function runHarness() {
  const adapter = steeredAdapter('process')
  const httpish = steeredAdapter('http')
  const clock = fakeClock()
  const options: Partial<InstanceOptions> = { adapters: [adapter, httpish], now: clock.now, runs: { maxContinuations: 2 } }
  // jobs: false — nothing runs unless the test drains the queue: every step is an explicit trigger.
  const manual: Partial<InstanceOptions> = { ...options, jobs: false }
  const reset = () => {
    adapter.calls.length = 0
    adapter.next = async () => ({ status: 'succeeded', exitCode: 0, output: 'done\n' })
    httpish.calls.length = 0
    clock.reset()
  }
  const squadWithAgent = async (api: TestApi, name = 'ada') => {
    const squad = (await api.call('POST', '/api/squads', { name: `Runs ${Math.random().toString(36).slice(2, 8)}` })).body.squad
    const agent = await addAgent(api, squad.id, name)
    return { squadId: squad.id as string, agentId: agent.id, agentToken: agent.token }
  }
  const run = async (api: TestApi, id: string) => (await api.call('GET', `/api/heartbeat-runs/${id}`)).body.run
  const drain = (api: TestApi) => api.instance.jobs.drain()
  return { adapter, httpish, clock, options, manual, reset, squadWithAgent, run, drain }
}
