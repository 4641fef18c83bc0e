import { Type, defineAgentAdapter, type AdapterConfig, type AdapterWakeInput, type AdapterWakeResult, type AgentAdapter } from '@slaw/core'
import {
  childEnv,
  defaultOutputTailBytes,
  firstLine,
  isTransientUpstream,
  renderWakePrompt,
  retryTimeFrom,
  runChild,
  checkCliEnvironment,
  summaryOf,
  wakeResuming,
  type ChildOutcome,
  type ChildRun,
} from '@slaw/adapters'
import { ClaudeStream } from './claude-stream.js'

export interface ClaudeAdapterOptions {
  /**
   * Variables of this server's environment the CLI also gets, unless the wake sets them. Default
   * `PATH` and `HOME`: the CLI finds its own login under HOME (~/.claude). Never list secrets; an
   * `ANTHROPIC_API_KEY` goes into the agent's `env` as a secret binding.
   */
  inheritEnv?: string[]
  /** How much output is kept for the operator: the last N bytes. Default 64 KiB. */
  outputTailBytes?: number
  /** How long a CLI that printed its final result may linger before it is stopped. Default 2000 ms. */
  lingerMs?: number
}

/** The agent config of a `claude_local` agent (`env`, `timeoutSec`, `graceSec`: the run engine's keys, merged in). */
export const claudeConfigSchema = Type.Object({
  command: Type.String({ minLength: 1, default: 'claude', errorMessage: 'command must be a non-empty string' }),
  cwd: Type.String({ pattern: '\\S', errorMessage: 'a claude_local agent needs cwd: the directory the CLI works in' }),
  model: Type.Optional(Type.String({ minLength: 1, errorMessage: 'model must be a non-empty string' })),
  maxTurns: Type.Optional(Type.Integer({ minimum: 1, errorMessage: 'maxTurns must be a whole number of at least 1' })),
  extraArgs: Type.Array(Type.String(), { default: [], errorMessage: 'extraArgs must be an array of strings' }),
  promptTemplate: Type.Optional(Type.String({ minLength: 1, errorMessage: 'promptTemplate must be a non-empty string' })),
})

/** The agent config of a `claude_local` agent as its wake sees it (`command` defaults to `claude`, `extraArgs` to `[]`). */
export type ClaudeAgentConfig = AdapterConfig<typeof claudeConfigSchema>

const authPattern = /not logged in|please run \/login|authentication_failed|invalid api key|oauth token (has )?expired|\b401\b|unauthorized|login required/i
const sessionPattern = /no conversation found with session id|session .* (not found|does not exist)/i

/**
 * Wakes an agent by running the Claude Code CLI:
 * `claude --print - --output-format stream-json --verbose [--resume S] [--model M] [--max-turns N]
 * [--append-system-prompt <agent prompt>] [extraArgs]`, with the wake prompt on stdin. The run's
 * summary is the CLI's final text, its usage the result's totals (per model), its cost what the CLI
 * reports. A session that cannot be resumed is retried once, fresh, within the same run.
 */
export function claudeAdapter(options: ClaudeAdapterOptions = {}): AgentAdapter {
  const inherit = options.inheritEnv ?? (process.platform === 'win32' ? ['PATH', 'SystemRoot', 'USERPROFILE', 'APPDATA'] : ['PATH', 'HOME'])
  const tailBytes = options.outputTailBytes ?? defaultOutputTailBytes
  const lingerMs = options.lingerMs ?? 2_000
  const running = new Set<ChildRun>()
  let closed = false

  const attempt = async (input: AdapterWakeInput<ClaudeAgentConfig>, sessionId: string | null): Promise<{ outcome: ChildOutcome; stream: ClaudeStream }> => {
    const config = input.config
    const args = ['--print', '-', '--output-format', 'stream-json', '--verbose']
    if (sessionId) args.push('--resume', sessionId)
    if (config.model) args.push('--model', config.model)
    if (config.maxTurns !== undefined) args.push('--max-turns', String(config.maxTurns))
    const agentPrompt = input.context?.agentPrompt
    if (agentPrompt && agentPrompt.trim()) args.push('--append-system-prompt', agentPrompt)
    args.push(...config.extraArgs)
    const stream = new ClaudeStream()
    let linger: NodeJS.Timeout | undefined
    const run = runChild({
      command: config.command,
      args,
      cwd: config.cwd,
      env: childEnv(inherit, input.env),
      stdin: renderWakePrompt(config.promptTemplate, input),
      timeoutMs: input.timeoutMs,
      graceMs: input.graceMs,
      signal: input.signal,
      tailBytes,
      ...(input.onOutput ? { onOutput: input.onOutput } : {}),
      onStdoutLine: (line) => {
        stream.line(line)
        // The result is the CLI's last word: one that lingers after it is stopped, not waited for.
        if (stream.result && !linger) linger = setTimeout(() => run.finishEarly(Math.min(input.graceMs, lingerMs)), lingerMs)
      },
    })
    running.add(run)
    try {
      return { outcome: await run.done, stream }
    } finally {
      clearTimeout(linger)
      running.delete(run)
    }
  }

  return defineAgentAdapter({
    type: 'claude_local',
    configSchema: claudeConfigSchema,

    wake(input) {
      return wakeResuming({
        adapter: 'claude_local',
        closed,
        signal: input.signal,
        cwd: input.config.cwd,
        resumed: input.session?.id ?? null,
        what: 'session',
        tailBytes,
        run: async (resume) => readResult(await attempt(input, resume), input),
      })
    },

    checkEnvironment(config) {
      return checkCliEnvironment({
        command: config.command,
        cwd: config.cwd,
        inherit,
        env: {},
        bindings: config.env,
        apiKeyNames: ['ANTHROPIC_API_KEY'],
        authArgs: ['auth', 'status', '--json'],
        loggedIn: (stdout) => {
          try {
            const status = JSON.parse(stdout) as { loggedIn?: unknown }
            return status.loggedIn === true
          } catch {
            return false
          }
        },
        loginHint: "run `claude` once and log in (or bind ANTHROPIC_API_KEY in the agent's env)",
      })
    },

    async close(): Promise<void> {
      closed = true
      const all = [...running]
      for (const run of all) run.stop('cancelled')
      await Promise.all(all.map((r) => r.done))
    },
  })
}

/** How a run went, from the process's end and the events it printed. */
function readResult({ outcome, stream }: { outcome: ChildOutcome; stream: ClaudeStream }, input: AdapterWakeInput<ClaudeAgentConfig>): AdapterWakeResult {
  const output = outcome.output
  const exitCode = outcome.exitCode
  if (outcome.ended === 'spawn_error') {
    const missing = outcome.spawnError!.code === 'ENOENT'
    return {
      status: 'failed',
      exitCode: null,
      error: missing ? `${outcome.spawnError!.message} (is the Claude Code CLI installed and on PATH?)` : outcome.spawnError!.message,
      ...(missing ? { errorCode: 'command_not_found' } : {}),
      output,
    }
  }
  if (outcome.ended === 'cancelled') return { status: 'cancelled', exitCode, error: 'the run was cancelled and the agent was stopped', output }
  const usage = stream.usage()
  const withUsage = usage.length ? { usage: usage.length === 1 ? usage[0]! : usage } : {}
  const summary = summaryOf(typeof stream.result?.result === 'string' ? stream.result.result : stream.lastText)
  if (outcome.ended === 'timed_out' && !stream.result) {
    return {
      status: 'timed_out',
      exitCode,
      errorCode: 'timeout',
      error: `the agent ran longer than its timeout (${input.timeoutMs} ms) and was stopped`,
      ...withUsage,
      ...(summary ? { summary } : {}),
      output,
    }
  }
  const r = stream.result
  const text = stream.errorText(outcome.stderrEnd)
  const failed = (errorCode: string | undefined, error: string, extra: Partial<AdapterWakeResult> = {}): AdapterWakeResult => ({
    status: 'failed',
    exitCode,
    error,
    ...(errorCode ? { errorCode } : {}),
    ...withUsage,
    ...(summary ? { summary } : {}),
    ...extra,
    output,
  })
  if (r) {
    if (r.subtype === 'success' && r.is_error !== true) {
      const sessionId = typeof r.session_id === 'string' ? r.session_id : stream.sessionId
      // exitCode is null when a lingering CLI was stopped after its result.
      return { status: 'succeeded', exitCode, ...withUsage, ...(summary ? { summary } : {}), ...(sessionId ? { session: { id: sessionId, key: input.session?.key ?? '' } } : {}), output }
    }
    if (r.subtype === 'error_max_turns') return failed('max_turns', `the agent used up its turns (maxTurns) before finishing`)
    return classify(text, failed, r.is_error === true ? 'the Claude CLI reported an error' : `the Claude CLI ended with ${String(r.subtype)}`)
  }
  // No result at all.
  if (outcome.ended === 'finished') return failed(undefined, 'the Claude CLI was stopped before it printed a result')
  if (text && (authPattern.test(text) || sessionPattern.test(text) || isTransientUpstream(text))) return classify(text, failed, '')
  if (stream.events === 0 && (stream.garbage > 0 || exitCode === 0)) {
    return failed(
      'unparseable_output',
      `the Claude CLI printed no stream-json events${exitCode !== null ? ` (exit code ${exitCode})` : ''}: ${firstLine(outcome.stdoutEnd || outcome.stderrEnd) || 'no output'}`,
    )
  }
  if (exitCode === 0) return failed('unparseable_output', 'the Claude CLI exited without a result event')
  return failed(undefined, `the Claude CLI exited with code ${exitCode ?? `null (${outcome.signal})`}${text ? `: ${firstLine(text)}` : ''}`)
}

function classify(text: string, failed: (code: string | undefined, error: string, extra?: Partial<AdapterWakeResult>) => AdapterWakeResult, fallback: string): AdapterWakeResult {
  if (sessionPattern.test(text)) return failed('session_not_found', `the saved Claude session was not found: ${firstLine(text)}`, { session: null })
  if (authPattern.test(text)) return failed('auth_required', `the Claude CLI is not logged in: ${firstLine(text)}`)
  if (isTransientUpstream(text)) {
    const at = retryTimeFrom(text)
    return failed('transient_upstream', `the Claude API is busy or rate-limited: ${firstLine(text)}`, at ? { retryNotBefore: at } : {})
  }
  return failed(undefined, `${fallback}: ${firstLine(text) || 'no message'}`)
}
