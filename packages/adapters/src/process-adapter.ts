import type { AdapterWakeInput, AdapterWakeResult, AgentAdapter, ErrorDetail } from '@slaw/core'
import { childEnv, defaultInheritEnv, missingCwd, runChild, type ChildOutcome, type ChildRun } from './child-process.js'
import { checkEnvContainer, checkOptionalString, checkSeconds } from './config-checks.js'
import { defaultOutputTailBytes } from './output-tail.js'
import { parseLastLineReport } from './report-line.js'

export interface ProcessAdapterOptions {
  /**
   * Names of this server's environment variables a child gets besides `input.env`, when `input.env`
   * does not set them itself. Default `['PATH']` (plus `SystemRoot` on Windows): the least a child
   * needs to find the commands it runs. Never list secrets here: the point of the wake environment
   * is that `SVC_MASTER_KEY`, `DATABASE_URL` and cloud credentials never reach an agent.
   */
  inheritEnv?: string[]
  /** How much of the agent's output (stdout and stderr together) is kept: the last N bytes. Default 64 KiB. */
  outputTailBytes?: number
}

/** The agent config of a `process` agent (docs/adapters.md). `env` is resolved by the run engine into `input.env`. */
export interface ProcessAgentConfig {
  command: string
  args?: string[]
  cwd?: string
  env?: Record<string, unknown>
  timeoutSec?: number
  graceSec?: number
}

/**
 * Wakes an agent by starting its command as a local child process.
 *
 * - The child's environment is exactly `input.env` plus the variables named by `inheritEnv`
 *   (default `PATH`); nothing else of this server's environment reaches it.
 * - The child leads its own process group. Past `input.timeoutMs`, or when `input.signal` aborts, the
 *   whole group gets SIGTERM and, `input.graceMs` later, SIGKILL; the result is `timed_out` or
 *   `cancelled`. When the command exits, whatever it left running in its group is killed.
 * - Exit 0 → `succeeded`; another code or a signal → `failed` with `exitCode`; a command that cannot
 *   start (missing, not executable, bad `cwd`) → `failed` with a sentence saying why.
 * - `output` is the last `outputTailBytes` of stdout and stderr together, however much the agent prints.
 * - If the last line of stdout is `{"slawReport": {"liveness"?, "usage"?}}` when the command exits,
 *   it is returned as the result's `liveness` and `usage` (agents normally report over the API instead).
 *
 * @example
 * ```ts
 * createInstance({ adapters: [processAdapter()] })
 * // agent: { adapterType: 'process', adapterConfig: { command: 'node', args: ['agent.mjs'], timeoutSec: 600 } }
 * ```
 */
export function processAdapter(options: ProcessAdapterOptions = {}): AgentAdapter {
  const inherit = options.inheritEnv ?? defaultInheritEnv()
  const tailBytes = options.outputTailBytes ?? defaultOutputTailBytes
  const running = new Set<ChildRun>()
  let closed = false

  return {
    type: 'process',

    validateConfig(config: Record<string, unknown>): ErrorDetail[] {
      const details: ErrorDetail[] = []
      if (typeof config.command !== 'string' || config.command.trim() === '') {
        details.push({ path: '/command', message: 'a process agent needs a command (the program to start)' })
      }
      if (config.args !== undefined && (!Array.isArray(config.args) || !config.args.every((a) => typeof a === 'string'))) {
        details.push({ path: '/args', message: 'args must be an array of strings' })
      }
      checkOptionalString(config, 'cwd', details)
      checkEnvContainer(config, details)
      checkSeconds(config, 'timeoutSec', 1, details)
      checkSeconds(config, 'graceSec', 0, details)
      return details
    },

    async wake(input: AdapterWakeInput): Promise<AdapterWakeResult> {
      if (closed) return { status: 'cancelled', error: 'the process adapter is closed' }
      if (input.signal.aborted) return { status: 'cancelled', error: 'the run was cancelled before the agent started' }
      const config = input.config
      const command = typeof config.command === 'string' ? config.command : ''
      if (command.trim() === '') return { status: 'failed', error: 'the agent has no command to start (adapterConfig.command)' }
      const args = Array.isArray(config.args) ? config.args.map(String) : []
      const cwd = typeof config.cwd === 'string' ? config.cwd : undefined
      const badCwd = await missingCwd(cwd)
      if (badCwd) return { status: 'failed', error: badCwd }
      const run = runChild({
        command,
        args,
        ...(cwd !== undefined ? { cwd } : {}),
        env: childEnv(inherit, input.env),
        timeoutMs: input.timeoutMs,
        graceMs: input.graceMs,
        signal: input.signal,
        tailBytes,
        ...(input.onOutput ? { onOutput: input.onOutput } : {}),
      })
      running.add(run)
      try {
        return resultOf(await run.done, input.timeoutMs)
      } finally {
        running.delete(run)
      }
    },

    async close(): Promise<void> {
      closed = true
      const all = [...running]
      for (const run of all) run.stop('cancelled')
      await Promise.all(all.map((r) => r.done))
    },
  } satisfies AgentAdapter
}

/** The process adapter's reading of how its child ended. */
function resultOf(o: ChildOutcome, timeoutMs: number): AdapterWakeResult {
  const output = o.output
  switch (o.ended) {
    case 'spawn_error':
      return { status: 'failed', exitCode: null, error: o.spawnError!.message, ...(o.spawnError!.code === 'ENOENT' ? { errorCode: 'command_not_found' } : {}), output }
    case 'timed_out':
      return { status: 'timed_out', exitCode: o.exitCode, error: `the agent ran longer than its timeout (${timeoutMs} ms) and was stopped`, output }
    case 'cancelled':
    case 'finished':
      return { status: 'cancelled', exitCode: o.exitCode, error: 'the run was cancelled and the agent was stopped', output }
    case 'exited':
      if (o.exitCode === 0) return { status: 'succeeded', exitCode: 0, ...parseLastLineReport(o.stdoutEnd), output }
      if (o.exitCode === null) return { status: 'failed', exitCode: null, error: `the agent was killed by ${o.signal}`, output }
      return { status: 'failed', exitCode: o.exitCode, error: `the agent exited with code ${o.exitCode}`, ...parseLastLineReport(o.stdoutEnd), output }
  }
}
