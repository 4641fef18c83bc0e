import type { AdapterEnvironmentCheck, AdapterEnvironmentReport, AdapterWakeResult } from '@slaw/core'
import { childEnv, missingCwd, runChild, type ChildOutcome } from './child-process.js'
import { isRecord } from './config-checks.js'

// Pieces the CLI adapters (claude_local, codex_local) share: the time a rate-limited CLI says it can
// be tried again, the environment check and the resuming wake (their JSON lines: json-event-stream).

const transientPattern = /rate.?limit|overloaded|usage limit|too many requests|\b429\b|\b529\b|\b503\b|temporarily unavailable|try again (at|in|later)|quota exceeded|capacity/i

/** A rate limit, an overload or a usage limit: the upstream says "later", not "never". */
export function isTransientUpstream(text: string): boolean {
  return transientPattern.test(text)
}

/**
 * When a rate-limited CLI says it can be tried again, from its message: "try again at 4pm",
 * "resets 3:45 PM", "try again in 20 minutes", an ISO time, or a `|<unix seconds>` suffix
 * ("Claude AI usage limit reached|1760000000"). A clock time is taken in this server's time zone,
 * the next time it comes round. Undefined when the message names no time.
 */
export function retryTimeFrom(text: string, now: Date = new Date()): Date | undefined {
  const epoch = /\|(\d{10})\b/.exec(text)
  if (epoch) return new Date(Number(epoch[1]) * 1000)
  const iso = /\b(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2}))\b/.exec(text)
  if (iso) {
    const d = new Date(iso[1]!)
    if (Number.isFinite(d.getTime())) return d
  }
  const rel = /\b(?:in|after)\s+(\d+(?:\.\d+)?)\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h)\b/i.exec(text)
  if (rel) {
    const n = Number(rel[1])
    const unit = rel[2]!.toLowerCase()
    const ms = unit.startsWith('h') ? 3_600_000 : unit.startsWith('m') ? 60_000 : 1_000
    return new Date(now.getTime() + n * ms)
  }
  const clock = /\b(?:at|resets?(?: at)?|until)\s+(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b/i.exec(text)
  if (clock) {
    let hour = Number(clock[1])
    const minute = Number(clock[2] ?? 0)
    const meridiem = clock[3]?.toLowerCase()
    if (!meridiem && clock[2] === undefined) return undefined
    if (meridiem === 'pm' && hour < 12) hour += 12
    if (meridiem === 'am' && hour === 12) hour = 0
    if (hour > 23 || minute > 59) return undefined
    const at = new Date(now)
    at.setHours(hour, minute, 0, 0)
    if (at.getTime() <= now.getTime()) at.setDate(at.getDate() + 1)
    return at
  }
  return undefined
}

/** The first line of a text that says something, cut to a sentence's length. */
export function firstLine(text: string, max = 300): string {
  const line =
    text
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l.length > 0) ?? ''
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

/** A run summary from a CLI's final text: trimmed, at most 10,000 characters (the run record's limit). */
export function summaryOf(text: string | undefined): string | undefined {
  const s = text?.trim()
  if (!s) return undefined
  return s.length > 10_000 ? `${s.slice(0, 9_999)}…` : s
}

export interface CliEnvironmentCheck {
  command: string
  cwd: string | undefined
  inherit: readonly string[]
  env: Record<string, string>
  /** Arguments that print the login state and exit (e.g. `auth status --json`). */
  authArgs: string[]
  loggedIn(stdout: string, stderr: string, exitCode: number | null): boolean
  loginHint: string
  /** Variables that log the CLI in by themselves (e.g. ANTHROPIC_API_KEY): bound in the agent's env, a failed login check is only a warning. */
  apiKeyNames?: string[]
  /** The agent's `env` bindings: plain values join the check's environment; secrets are not resolved for a check. */
  bindings?: unknown
}

/** The plain values of an agent's `env` bindings (strings and `{type: 'plain'}`); secret references are left out. */
export function plainBindings(bindings: unknown): { plain: Record<string, string>; names: string[] } {
  const plain: Record<string, string> = {}
  const names: string[] = []
  if (!isRecord(bindings)) return { plain, names }
  for (const [name, b] of Object.entries(bindings)) {
    names.push(name)
    if (typeof b === 'string') plain[name] = b
    else if (isRecord(b) && b.type === 'plain' && typeof b.value === 'string') plain[name] = b.value
  }
  return { plain, names }
}

/**
 * `checkEnvironment` of a CLI adapter: the working directory exists, the command runs and says its
 * version, and the CLI says it is logged in. Each step is bounded to 20 s.
 */
export async function checkCliEnvironment(o: CliEnvironmentCheck): Promise<AdapterEnvironmentReport> {
  const checks: AdapterEnvironmentCheck[] = []
  const bound = plainBindings(o.bindings)
  const env = childEnv(o.inherit, { ...bound.plain, ...o.env })
  const cwdProblem = o.cwd === undefined ? 'no cwd is configured' : await missingCwd(o.cwd)
  checks.push(cwdProblem ? { name: 'cwd', status: 'fail', message: cwdProblem } : { name: 'cwd', status: 'ok', message: `${o.cwd} exists` })
  const cwd = cwdProblem ? undefined : o.cwd
  const run = async (args: string[]): Promise<ChildOutcome> =>
    runChild({ command: o.command, args, ...(cwd ? { cwd } : {}), env, timeoutMs: 20_000, graceMs: 1_000, signal: new AbortController().signal, tailBytes: 16 * 1024 }).done
  const version = await run(['--version'])
  if (version.ended === 'spawn_error') {
    checks.push({ name: 'command', status: 'fail', message: version.spawnError!.message })
    return { ok: false, checks }
  }
  if (version.ended !== 'exited' || version.exitCode !== 0) {
    checks.push({ name: 'command', status: 'fail', message: `${o.command} --version did not succeed (exit code ${String(version.exitCode)}): ${firstLine(version.stderrEnd || version.stdoutEnd)}` })
    return { ok: false, checks }
  }
  checks.push({ name: 'command', status: 'ok', message: `${o.command} is installed` })
  checks.push({ name: 'version', status: 'ok', message: firstLine(version.stdoutEnd) || 'unknown' })
  const auth = await run(o.authArgs)
  const loggedIn = auth.ended === 'exited' && o.loggedIn(auth.stdoutEnd, auth.stderrEnd, auth.exitCode)
  const keyBound = (o.apiKeyNames ?? []).find((name) => bound.names.includes(name))
  if (loggedIn) checks.push({ name: 'login', status: 'ok', message: 'logged in' })
  // A secret API key in the agent's env logs the CLI in at run time; the check does not resolve secrets.
  else if (keyBound) checks.push({ name: 'login', status: 'warn', message: `the CLI has no login of its own; the agent's env binds ${keyBound}, which runs use` })
  else checks.push({ name: 'login', status: 'fail', message: `not logged in: ${o.loginHint}` })
  return { ok: checks.every((c) => c.status !== 'fail'), checks }
}

/**
 * The wake of a CLI agent that keeps sessions: refuses a closed adapter or a cancelled run, checks
 * the working directory, runs once resuming the saved session, and when the CLI says that session
 * no longer exists, runs once more with a fresh one in the same run (the saved id is then cleared
 * unless the fresh run succeeded). `what` names the session in the output tail (`session`, `thread`).
 */
export async function wakeResuming(o: {
  adapter: string
  closed: boolean
  signal: AbortSignal
  cwd: string | undefined
  resumed: string | null
  what: string
  tailBytes: number
  run: (resume: string | null) => Promise<AdapterWakeResult>
}): Promise<AdapterWakeResult> {
  if (o.closed) return { status: 'cancelled', error: `the ${o.adapter} adapter is closed` }
  if (o.signal.aborted) return { status: 'cancelled', error: 'the run was cancelled before the agent started' }
  const badCwd = await missingCwd(o.cwd)
  if (badCwd) return { status: 'failed', error: badCwd }
  const first = await o.run(o.resumed)
  if (first.errorCode !== 'session_not_found' || !o.resumed || o.signal.aborted) return first
  // The saved session is gone (expired, made on another machine): once more, fresh, in the same run.
  const fresh = await o.run(null)
  return {
    ...fresh,
    output: `${first.output ?? ''}\n--- ${o.what} ${o.resumed} was not found; started a fresh ${o.what} ---\n${fresh.output ?? ''}`.slice(-o.tailBytes),
    ...(fresh.status === 'succeeded' ? {} : { session: null }),
  }
}
