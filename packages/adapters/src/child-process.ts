import { spawn, type ChildProcess } from 'node:child_process'
import { stat } from 'node:fs/promises'
import type { AdapterOutputChunk } from '@slaw/core'
import { timerMs } from './config-checks.js'
import { OutputTail } from './output-tail.js'

// The process machinery every command-running adapter shares (process, claude_local, codex_local):
// an exact environment, a child that leads its own process group and is stopped with it, a bounded
// output tail, and timeout and cancel with a grace period before SIGKILL.

/** The default `inheritEnv`: the least a child needs to find the commands it runs. */
export function defaultInheritEnv(): string[] {
  return process.platform === 'win32' ? ['PATH', 'SystemRoot'] : ['PATH']
}

/** Exactly the wake environment, plus the named variables of this server when the wake does not set them. */
export function childEnv(inherit: readonly string[], wakeEnv: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const name of inherit) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  return Object.assign(env, wakeEnv)
}

/** A sentence when `cwd` is not a directory, else null. */
export async function missingCwd(cwd: string | undefined): Promise<string | null> {
  if (cwd === undefined) return null
  const dir = await stat(cwd).catch(() => null)
  return dir?.isDirectory() ? null : `the agent's working directory ${cwd} does not exist`
}

export interface ChildRunOptions {
  command: string
  args: string[]
  cwd?: string
  env: Record<string, string>
  /** Written to the child's stdin, which is then closed; absent: stdin is /dev/null. */
  stdin?: string
  timeoutMs: number
  graceMs: number
  signal: AbortSignal
  /** How much of stdout and stderr together is kept: the last N bytes. */
  tailBytes: number
  /** Every chunk as it arrives (live output). Errors it throws are ignored. */
  onOutput?: (chunk: AdapterOutputChunk) => void
  /** Every complete line of stdout (JSON event streams), without its newline. */
  onStdoutLine?: (line: string) => void
}

/** How a child ended. `finished`: the caller ended it early with `finishEarly()` (its work was done). */
export interface ChildOutcome {
  ended: 'exited' | 'spawn_error' | 'timed_out' | 'cancelled' | 'finished'
  exitCode: number | null
  signal: NodeJS.Signals | null
  /** For `spawn_error`: the sentence saying why it could not start, and the errno code. */
  spawnError?: { message: string; code: string | undefined }
  /** The last `tailBytes` of stdout and stderr together. */
  output: string
  /** The last 16 KiB of stdout alone. */
  stdoutEnd: string
  /** The last 16 KiB of stderr alone. */
  stderrEnd: string
}

export interface ChildRun {
  /** Stops the group (SIGTERM, SIGKILL after the grace): the outcome is `cancelled`. */
  stop(reason: 'cancelled'): void
  /** The child said all it had to say but lingers: stop its group; the outcome is `finished`. */
  finishEarly(graceMs?: number): void
  done: Promise<ChildOutcome>
}

/**
 * Starts a command as the leader of its own process group. Past `timeoutMs`, or when `signal`
 * aborts, the whole group gets SIGTERM and, `graceMs` later, SIGKILL. When the command exits,
 * whatever it left running in its group is killed. Never throws: a command that cannot start ends
 * `spawn_error` with a sentence.
 */
export function runChild(o: ChildRunOptions): ChildRun {
  const tail = new OutputTail(o.tailBytes)
  const stdoutEnd = new OutputTail(16 * 1024)
  const stderrEnd = new OutputTail(16 * 1024)
  let child: ChildProcess
  let stopping: 'timed_out' | 'cancelled' | 'finished' | null = null
  let killTimer: NodeJS.Timeout | undefined
  let settled = false
  // Once the leader has exited its pid may be reused; the group is signalled only up to then.
  let exited = false
  let resolveDone!: (r: ChildOutcome) => void
  const done = new Promise<ChildOutcome>((r) => (resolveDone = r))
  let partial = ''

  const signalGroup = (signal: NodeJS.Signals): void => {
    if (child?.pid === undefined) return
    try {
      // A negative pid signals the whole process group the child leads (detached: true). Windows
      // has no process groups to signal: there only the child itself is stopped.
      if (process.platform === 'win32') child.kill(signal)
      else process.kill(-child.pid, signal)
    } catch {
      // ESRCH: the group is already gone.
    }
  }

  const stop = (reason: 'timed_out' | 'cancelled' | 'finished', graceMs = o.graceMs): void => {
    if (stopping || settled || exited) return
    stopping = reason
    signalGroup('SIGTERM')
    killTimer = setTimeout(() => signalGroup('SIGKILL'), timerMs(graceMs))
  }

  const base = (): Pick<ChildOutcome, 'output' | 'stdoutEnd' | 'stderrEnd'> => ({ output: tail.text(), stdoutEnd: stdoutEnd.text(), stderrEnd: stderrEnd.text() })
  const finish = (outcome: Omit<ChildOutcome, 'output' | 'stdoutEnd' | 'stderrEnd'>): void => {
    if (settled) return
    settled = true
    clearTimeout(timeoutTimer)
    clearTimeout(killTimer)
    o.signal.removeEventListener('abort', onAbort)
    if (partial && o.onStdoutLine) safe(() => o.onStdoutLine!(partial))
    partial = ''
    resolveDone({ ...outcome, ...base() })
  }

  try {
    child = spawn(o.command, o.args, { cwd: o.cwd, env: o.env, detached: true, stdio: [o.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], windowsHide: true })
  } catch (err) {
    // spawn throws synchronously only for malformed arguments (e.g. a NUL byte in an argument).
    const outcome: ChildOutcome = {
      ended: 'spawn_error',
      exitCode: null,
      signal: null,
      spawnError: { message: `the agent's command could not be started: ${(err as Error).message}`, code: (err as NodeJS.ErrnoException).code },
      output: '',
      stdoutEnd: '',
      stderrEnd: '',
    }
    return { stop: () => {}, finishEarly: () => {}, done: Promise.resolve(outcome) }
  }

  const timeoutTimer = setTimeout(() => stop('timed_out'), timerMs(o.timeoutMs))
  const onAbort = (): void => stop('cancelled')
  o.signal.addEventListener('abort', onAbort, { once: true })

  if (o.stdin !== undefined && child.stdin) {
    // A child that exits without reading its stdin makes the write fail with EPIPE: not our error.
    child.stdin.on('error', () => undefined)
    child.stdin.end(o.stdin)
  }

  child.stdout!.on('data', (chunk: Buffer) => {
    tail.write(chunk)
    stdoutEnd.write(chunk)
    if (o.onOutput) safe(() => o.onOutput!({ stream: 'stdout', text: chunk.toString('utf8') }))
    if (o.onStdoutLine) {
      const text = partial + chunk.toString('utf8')
      const lines = text.split('\n')
      partial = lines.pop() ?? ''
      // A line longer than 8 MiB without a newline is no event anyone can parse; keep memory bounded.
      if (partial.length > 8 * 1024 * 1024) partial = ''
      for (const line of lines) safe(() => o.onStdoutLine!(line))
    }
  })
  child.stderr!.on('data', (chunk: Buffer) => {
    tail.write(chunk)
    stderrEnd.write(chunk)
    if (o.onOutput) safe(() => o.onOutput!({ stream: 'stderr', text: chunk.toString('utf8') }))
  })

  child.on('error', (err: NodeJS.ErrnoException) => {
    // Emitted when the command cannot be started; the child never ran.
    finish({ ended: 'spawn_error', exitCode: null, signal: null, spawnError: { message: spawnError(o.command, err), code: err.code } })
  })

  child.on('exit', (code, signal) => {
    // Whatever the command left behind in its group goes with it.
    signalGroup('SIGKILL')
    exited = true
    clearTimeout(killTimer)
    const outcome = (): Omit<ChildOutcome, 'output' | 'stdoutEnd' | 'stderrEnd'> => ({ ended: stopping ?? 'exited', exitCode: code, signal })
    // Wait for the pipes to drain so the tail is complete; a grandchild that left the group could
    // hold them open, so give up on them after the grace period.
    const drained = setTimeout(() => {
      child.stdout?.destroy()
      child.stderr?.destroy()
      finish(outcome())
    }, timerMs(o.graceMs))
    child.once('close', () => {
      clearTimeout(drained)
      finish(outcome())
    })
  })

  return { stop: (reason) => stop(reason), finishEarly: (graceMs) => stop('finished', graceMs), done }
}

function safe(fn: () => void): void {
  try {
    fn()
  } catch {
    // A listener's bug must not break the run.
  }
}

export function spawnError(command: string, err: NodeJS.ErrnoException): string {
  if (err.code === 'ENOENT') return `the agent's command was not found: ${command}`
  if (err.code === 'EACCES') return `the agent's command is not executable: ${command}`
  return `the agent's command could not be started: ${command} (${err.code ?? err.message})`
}
