import { spawn, type ChildProcess } from 'node:child_process'
import { stat } from 'node:fs/promises'
import type { AdapterWakeInput, AdapterWakeResult, AgentAdapter, ErrorDetail } from '@slaw/core'
import { checkEnvContainer, checkOptionalString, checkSeconds, timerMs } from './config-checks.js'
import { OutputTail, defaultOutputTailBytes } from './output-tail.js'
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

/** The agent config of a `process` agent (DECISIONS section 4). `env` is resolved by the run engine into `input.env`. */
export interface ProcessAgentConfig {
  command: string
  args?: string[]
  cwd?: string
  env?: Record<string, unknown>
  timeoutSec?: number
  graceSec?: number
}

interface Running {
  stop(reason: 'cancelled'): void
  done: Promise<AdapterWakeResult>
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
  const inherit = options.inheritEnv ?? (process.platform === 'win32' ? ['PATH', 'SystemRoot'] : ['PATH'])
  const tailBytes = options.outputTailBytes ?? defaultOutputTailBytes
  const running = new Set<Running>()
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
      if (cwd !== undefined) {
        const dir = await stat(cwd).catch(() => null)
        if (!dir?.isDirectory()) return { status: 'failed', error: `the agent's working directory ${cwd} does not exist` }
      }
      const env: Record<string, string> = {}
      for (const name of inherit) {
        const value = process.env[name]
        if (value !== undefined) env[name] = value
      }
      Object.assign(env, input.env)

      const run = start(command, args, cwd, env, input, tailBytes)
      running.add(run)
      try {
        return await run.done
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

function start(command: string, args: string[], cwd: string | undefined, env: Record<string, string>, input: AdapterWakeInput, tailBytes: number): Running {
  const tail = new OutputTail(tailBytes)
  // The report line is read from stdout alone, so stderr interleaving cannot break it.
  const stdoutEnd = new OutputTail(16 * 1024)
  let child: ChildProcess
  let stopping: 'timed_out' | 'cancelled' | null = null
  let killTimer: NodeJS.Timeout | undefined
  let settled = false
  // Once the leader has exited its pid may be reused; the group is signalled only up to then.
  let exited = false
  let resolveDone!: (r: AdapterWakeResult) => void
  const done = new Promise<AdapterWakeResult>((r) => (resolveDone = r))

  const signalGroup = (signal: NodeJS.Signals): void => {
    if (child.pid === undefined) return
    try {
      // A negative pid signals the whole process group the child leads (detached: true). Windows
      // has no process groups to signal: there only the child itself is stopped.
      if (process.platform === 'win32') child.kill(signal)
      else process.kill(-child.pid, signal)
    } catch {
      // ESRCH: the group is already gone.
    }
  }

  const stop = (reason: 'timed_out' | 'cancelled'): void => {
    if (stopping || settled || exited) return
    stopping = reason
    signalGroup('SIGTERM')
    killTimer = setTimeout(() => signalGroup('SIGKILL'), timerMs(input.graceMs))
  }

  const finish = (result: AdapterWakeResult): void => {
    if (settled) return
    settled = true
    clearTimeout(timeoutTimer)
    clearTimeout(killTimer)
    input.signal.removeEventListener('abort', onAbort)
    resolveDone({ ...result, output: tail.text() })
  }

  try {
    child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true })
  } catch (err) {
    // spawn throws synchronously only for malformed arguments (e.g. a NUL byte in an argument).
    const result: AdapterWakeResult = { status: 'failed', error: `the agent's command could not be started: ${(err as Error).message}` }
    return { stop: () => {}, done: Promise.resolve(result) }
  }

  const timeoutTimer = setTimeout(() => stop('timed_out'), timerMs(input.timeoutMs))
  const onAbort = (): void => stop('cancelled')
  input.signal.addEventListener('abort', onAbort, { once: true })

  child.stdout!.on('data', (chunk: Buffer) => {
    tail.write(chunk)
    stdoutEnd.write(chunk)
  })
  child.stderr!.on('data', (chunk: Buffer) => tail.write(chunk))

  child.on('error', (err: NodeJS.ErrnoException) => {
    // Emitted when the command cannot be started; the child never ran.
    finish({ status: 'failed', exitCode: null, error: spawnError(command, err) })
  })

  child.on('exit', (code, signal) => {
    // Whatever the command left behind in its group goes with it.
    signalGroup('SIGKILL')
    exited = true
    clearTimeout(killTimer)
    const outcome = (): AdapterWakeResult => {
      if (stopping === 'timed_out') return { status: 'timed_out', exitCode: code, error: `the agent ran longer than its timeout (${input.timeoutMs} ms) and was stopped` }
      if (stopping === 'cancelled') return { status: 'cancelled', exitCode: code, error: 'the run was cancelled and the agent was stopped' }
      if (code === 0) return { status: 'succeeded', exitCode: 0, ...parseLastLineReport(stdoutEnd.text()) }
      if (code === null) return { status: 'failed', exitCode: null, error: `the agent was killed by ${signal}` }
      return { status: 'failed', exitCode: code, error: `the agent exited with code ${code}`, ...parseLastLineReport(stdoutEnd.text()) }
    }
    // Wait for the pipes to drain so the tail is complete; a grandchild that left the group could
    // hold them open, so give up on them after the grace period.
    const drained = setTimeout(() => {
      child.stdout?.destroy()
      child.stderr?.destroy()
      finish(outcome())
    }, timerMs(input.graceMs))
    child.once('close', () => {
      clearTimeout(drained)
      finish(outcome())
    })
  })

  return { stop: (reason) => stop(reason), done }
}

function spawnError(command: string, err: NodeJS.ErrnoException): string {
  if (err.code === 'ENOENT') return `the agent's command was not found: ${command}`
  if (err.code === 'EACCES') return `the agent's command is not executable: ${command}`
  return `the agent's command could not be started: ${command} (${err.code ?? err.message})`
}
