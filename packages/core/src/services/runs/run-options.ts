import type { RunOptions } from './run-engine.js'

/**
 * Run engine settings from the environment (what `slaw start` reads): SVC_MAX_CONCURRENT_RUNS
 * (instance), SVC_MAX_CONCURRENT_RUNS_PER_SQUAD, SVC_MAX_CONCURRENT_RUNS_PER_AGENT (default 1),
 * SVC_MAX_CONTINUATIONS (default 3), SVC_RUN_RETENTION_DAYS (default 90) and
 * SVC_RUN_OUTPUT_RETENTION_DAYS (default 14) and SVC_MAX_UPSTREAM_RETRIES (default 3; 0 turns
 * retries of transient upstream failures off). A value that is not a positive integer throws.
 */
export function runOptionsFromEnv(env: Record<string, string | undefined>): RunOptions {
  const int = (name: string, min: number): number | undefined => {
    const raw = env[name]
    if (raw === undefined || raw.trim() === '') return undefined
    const n = Number(raw)
    if (!Number.isInteger(n) || n < min) throw new TypeError(`${name} must be an integer of at least ${min} (got "${raw}")`)
    return n
  }
  const options: RunOptions = {}
  const set = <K extends keyof RunOptions>(key: K, value: RunOptions[K] | undefined) => {
    if (value !== undefined) options[key] = value
  }
  set('maxConcurrentRuns', int('SVC_MAX_CONCURRENT_RUNS', 1))
  set('maxConcurrentRunsPerSquad', int('SVC_MAX_CONCURRENT_RUNS_PER_SQUAD', 1))
  set('maxConcurrentRunsPerAgent', int('SVC_MAX_CONCURRENT_RUNS_PER_AGENT', 1))
  set('maxContinuations', int('SVC_MAX_CONTINUATIONS', 0))
  set('retentionDays', int('SVC_RUN_RETENTION_DAYS', 1))
  set('outputRetentionDays', int('SVC_RUN_OUTPUT_RETENTION_DAYS', 1))
  set('maxUpstreamRetries', int('SVC_MAX_UPSTREAM_RETRIES', 0))
  return options
}
