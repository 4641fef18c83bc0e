import t from 'tap'
import type { AdapterWakeResult, AgentAdapter } from '@slaw/core'
import { adapterContract, playContractAgent, type AdapterScenario } from '@slaw/core/testing'

// The kit needs no process and no network of its own: an adapter whose "agent" is a function in this
// process passes it too. It is also the smallest adapter that keeps every rule of the contract.

const kinds = new Set(['succeed', 'fail', 'unreachable', 'hang', 'print', 'echo-env'])

function inlineAdapter(): AgentAdapter {
  const stops = new Set<(why: 'cancelled') => void>()
  const pending = new Set<Promise<AdapterWakeResult>>()
  return {
    type: 'inline',
    validateConfig: (config) => {
      const s = config.scenario as { kind?: unknown } | undefined
      return s && typeof s === 'object' && kinds.has(String(s.kind)) ? [] : [{ path: '/scenario', message: 'scenario must be an AdapterScenario' }]
    },
    wake(input) {
      const p = (async (): Promise<AdapterWakeResult> => {
        if (input.signal.aborted) return { status: 'cancelled', error: 'cancelled before the agent started' }
        const scenario = input.config.scenario as AdapterScenario
        if (scenario.kind === 'unreachable') return { status: 'failed', error: 'there is no such agent' }
        const stop = new AbortController()
        let why: 'timed_out' | 'cancelled' | null = null
        const halt = (reason: 'timed_out' | 'cancelled'): void => {
          why ??= reason
          stop.abort()
        }
        const timer = setTimeout(() => halt('timed_out'), input.timeoutMs)
        const onAbort = (): void => halt('cancelled')
        input.signal.addEventListener('abort', onAbort, { once: true })
        stops.add(halt)
        try {
          const outcome = await playContractAgent(scenario, { ...input.env }, { signal: stop.signal })
          const output = outcome.output.slice(-64 * 1024)
          if (why === 'timed_out') return { status: 'timed_out', output, error: 'the agent ran past its timeout' }
          if (why === 'cancelled') return { status: 'cancelled', output, error: 'the run was cancelled' }
          return outcome.ok ? { status: 'succeeded', exitCode: 0, output } : { status: 'failed', exitCode: outcome.exitCode, output, error: `the agent failed with ${outcome.exitCode}` }
        } catch (err) {
          return { status: 'failed', error: `the agent could not report: ${(err as Error).message}` }
        } finally {
          clearTimeout(timer)
          input.signal.removeEventListener('abort', onAbort)
          stops.delete(halt)
        }
      })()
      pending.add(p)
      void p.finally(() => pending.delete(p))
      return p
    },
    async close() {
      for (const halt of stops) halt('cancelled')
      await Promise.all(pending)
    },
  } satisfies AgentAdapter
}

void adapterContract(t, () => inlineAdapter(), {
  configFor: (scenario) => ({ scenario }),
  invalidConfigs: [{}, { scenario: { kind: 'dance' } }],
})
