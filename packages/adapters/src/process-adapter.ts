import { Type, defineAgentAdapter, type AdapterConfig, type AdapterWakeResult, type AgentAdapter } from '@slaw/core'
import { childEnv, defaultInheritEnv, missingCwd, runChild, type ChildOutcome, type ChildRun } from './child-process.js'
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

/**
 * The agent config of a `process` agent (docs/adapters.md). `env`, `timeoutSec` and `graceSec` are the
 * run engine's keys, merged in by `defineAgentAdapter`; `env` is resolved by the engine into `input.env`.
 */
export const processConfigSchema = Type.Object({
  command: Type.String({ pattern: '\\S', errorMessage: 'a process agent needs a command (the program to start)' }),
  args: Type.Array(Type.String(), { default: [], errorMessage: 'args must be an array of strings' }),
  cwd: Type.Optional(Type.String({ minLength: 1, errorMessage: 'cwd must be a non-empty string' })),
})

/** The agent config of a `process` agent, as its wake sees it (`args` defaults to `[]`). */
export type ProcessAgentConfig = AdapterConfig<typeof processConfigSchema>

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

  return defineAgentAdapter({
    type: 'process',
    configSchema: processConfigSchema,

    async wake(input) {
      if (closed) return { status: 'cancelled', error: 'the process adapter is closed' }
      if (input.signal.aborted) return { status: 'cancelled', error: 'the run was cancelled before the agent started' }
      const { command, args, cwd } = input.config
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
  })
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
