import { Type, defineAgentAdapter, type AdapterConfig, type AdapterWakeInput, type AdapterWakeResult, type AgentAdapter } from '@slaw/core'
import {
  checkCliEnvironment,
  childEnv,
  defaultOutputTailBytes,
  firstLine,
  isTransientUpstream,
  renderWakePrompt,
  retryTimeFrom,
  runChild,
  summaryOf,
  wakeResuming,
  type ChildOutcome,
  type ChildRun,
} from '@slaw/adapters'
import { CodexStream, type CodexPriceTable } from './codex-stream.js'

export interface CodexAdapterOptions {
  /**
   * Variables of this server's environment the CLI also gets, unless the wake sets them. Default
   * `PATH` and `HOME`: the CLI finds its login under HOME (~/.codex). Never list secrets; an
   * `OPENAI_API_KEY` goes into the agent's `env` as a secret binding.
   */
  inheritEnv?: string[]
  outputTailBytes?: number
  /** How long a CLI that finished its turn may linger before it is stopped. Default 2000 ms. */
  lingerMs?: number
  /**
   * Prices per model in US dollars per million tokens, to estimate what Codex runs cost (Codex
   * reports none). Without a price a run's tokens are recorded `unpriced`, never as 0 cents.
   */
  prices?: CodexPriceTable
}

/** The agent config of a `codex_local` agent (`env`, `timeoutSec`, `graceSec`: the run engine's keys, merged in). */
export const codexConfigSchema = Type.Object({
  command: Type.String({ minLength: 1, default: 'codex', errorMessage: 'command must be a non-empty string' }),
  cwd: Type.String({ pattern: '\\S', errorMessage: 'a codex_local agent needs cwd: the directory the CLI works in' }),
  model: Type.Optional(Type.String({ minLength: 1, errorMessage: 'model must be a non-empty string' })),
  extraArgs: Type.Array(Type.String(), { default: [], errorMessage: 'extraArgs must be an array of strings' }),
  promptTemplate: Type.Optional(Type.String({ minLength: 1, errorMessage: 'promptTemplate must be a non-empty string' })),
  // Said outright, so a config copied from a claude_local agent is refused instead of silently ignored.
  maxTurns: Type.Optional(Type.Never({ errorMessage: 'maxTurns is a claude_local setting; the Codex CLI has none' })),
})

/** The agent config of a `codex_local` agent as its wake sees it (`command` defaults to `codex`, `extraArgs` to `[]`). */
export type CodexAgentConfig = AdapterConfig<typeof codexConfigSchema>

const authPattern = /not logged in|please (run )?(codex )?login|\b401\b|unauthorized|invalid api key|incorrect api key|missing bearer|authentication/i
const sessionPattern = /no rollout found for thread id|unknown thread id|thread .* not found/i

/**
 * Wakes an agent by running the Codex CLI: `codex exec --json [--model M] [extraArgs] -`, or
 * `codex exec --json [--model M] [extraArgs] resume <threadId> -` to continue a saved thread, with
 * the wake prompt on stdin. The run's summary is the last agent message; its usage the completed
 * turns' tokens, unpriced unless `prices` names the model.
 */
export function codexAdapter(options: CodexAdapterOptions = {}): AgentAdapter {
  const inherit = options.inheritEnv ?? (process.platform === 'win32' ? ['PATH', 'SystemRoot', 'USERPROFILE', 'APPDATA'] : ['PATH', 'HOME'])
  const tailBytes = options.outputTailBytes ?? defaultOutputTailBytes
  const lingerMs = options.lingerMs ?? 2_000
  const running = new Set<ChildRun>()
  let closed = false

  const attempt = async (input: AdapterWakeInput<CodexAgentConfig>, threadId: string | null): Promise<{ outcome: ChildOutcome; stream: CodexStream }> => {
    const config = input.config
    const args = ['exec', '--json']
    if (config.model) args.push('--model', config.model)
    args.push(...config.extraArgs)
    if (threadId) args.push('resume', threadId)
    args.push('-')
    const stream = new CodexStream()
    let linger: NodeJS.Timeout | undefined
    const run = runChild({
      command: config.command,
      args,
      cwd: config.cwd,
      env: childEnv(inherit, input.env),
      stdin: withAgentPrompt(input.context?.agentPrompt, renderWakePrompt(config.promptTemplate, input)),
      timeoutMs: input.timeoutMs,
      graceMs: input.graceMs,
      signal: input.signal,
      tailBytes,
      ...(input.onOutput ? { onOutput: input.onOutput } : {}),
      onStdoutLine: (line) => {
        stream.line(line)
        if (stream.done && !linger) linger = setTimeout(() => run.finishEarly(Math.min(input.graceMs, lingerMs)), lingerMs)
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

  const readResult = ({ outcome, stream }: { outcome: ChildOutcome; stream: CodexStream }, input: AdapterWakeInput<CodexAgentConfig>): AdapterWakeResult => {
    const output = outcome.output
    const exitCode = outcome.exitCode
    if (outcome.ended === 'spawn_error') {
      const missing = outcome.spawnError!.code === 'ENOENT'
      return {
        status: 'failed',
        exitCode: null,
        error: missing ? `${outcome.spawnError!.message} (is the Codex CLI installed and on PATH?)` : outcome.spawnError!.message,
        ...(missing ? { errorCode: 'command_not_found' } : {}),
        output,
      }
    }
    if (outcome.ended === 'cancelled') return { status: 'cancelled', exitCode, error: 'the run was cancelled and the agent was stopped', output }
    const model = input.config.model || undefined
    const usage = stream.usage(model, options.prices)
    const summary = summaryOf(stream.lastMessage)
    const extra = { ...(usage ? { usage } : {}), ...(summary ? { summary } : {}) }
    if (stream.turnsCompleted > 0 && !stream.turnFailed && (outcome.ended === 'finished' || outcome.ended === 'timed_out' || exitCode === 0)) {
      // exitCode is null when a lingering CLI was stopped after its turn.
      return { status: 'succeeded', exitCode, ...extra, ...(stream.threadId ? { session: { id: stream.threadId, key: input.session?.key ?? '' } } : {}), output }
    }
    if (outcome.ended === 'timed_out')
      return { status: 'timed_out', exitCode, errorCode: 'timeout', error: `the agent ran longer than its timeout (${input.timeoutMs} ms) and was stopped`, ...extra, output }
    const text = stream.errorText(outcome.stderrEnd)
    const failed = (errorCode: string | undefined, error: string, more: Partial<AdapterWakeResult> = {}): AdapterWakeResult => ({
      status: 'failed',
      exitCode,
      error,
      ...(errorCode ? { errorCode } : {}),
      ...extra,
      ...more,
      output,
    })
    if (sessionPattern.test(text))
      return failed('session_not_found', `the saved Codex thread was not found: ${firstLine(text.split('\n').find((l) => sessionPattern.test(l)) ?? text)}`, { session: null })
    if (authPattern.test(text)) return failed('auth_required', `the Codex CLI is not logged in: ${firstLine(text)}`)
    if (isTransientUpstream(text)) {
      const at = retryTimeFrom(text)
      return failed('transient_upstream', `the OpenAI API is busy or rate-limited: ${firstLine(text)}`, at ? { retryNotBefore: at } : {})
    }
    if (/not inside a trusted directory/i.test(text))
      return failed('untrusted_directory', 'the Codex CLI refuses to work outside a git repository: make cwd a git repository or add "--skip-git-repo-check" to extraArgs')
    if (stream.events === 0 && (stream.garbage > 0 || exitCode === 0)) {
      return failed(
        'unparseable_output',
        `the Codex CLI printed no JSON events${exitCode !== null ? ` (exit code ${exitCode})` : ''}: ${firstLine(outcome.stdoutEnd || outcome.stderrEnd) || 'no output'}`,
      )
    }
    if (stream.turnFailed) return failed(undefined, `the Codex turn failed: ${firstLine(stream.turnFailed)}`)
    if (exitCode === 0) return failed('unparseable_output', 'the Codex CLI exited without completing its turn')
    return failed(undefined, `the Codex CLI exited with code ${exitCode ?? `null (${outcome.signal})`}${text ? `: ${firstLine(text)}` : ''}`)
  }

  return defineAgentAdapter({
    type: 'codex_local',
    configSchema: codexConfigSchema,

    wake(input) {
      return wakeResuming({
        adapter: 'codex_local',
        closed,
        signal: input.signal,
        cwd: input.config.cwd,
        resumed: input.session?.id ?? null,
        what: 'thread',
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
        apiKeyNames: ['OPENAI_API_KEY', 'CODEX_API_KEY'],
        authArgs: ['login', 'status'],
        // `codex login status` exits 0 and says "Logged in using …" when logged in; 1 and "Not logged in" otherwise.
        loggedIn: (stdout, stderr, exitCode) => exitCode === 0 && !/not logged in/i.test(stdout + stderr),
        loginHint: "run `codex login` (or bind OPENAI_API_KEY in the agent's env)",
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

/**
 * Codex has no system-prompt flag: the agent's own instructions (its `prompt`) go first on stdin,
 * set apart from the wake prompt.
 */
function withAgentPrompt(agentPrompt: string | null | undefined, wakePrompt: string): string {
  return agentPrompt && agentPrompt.trim() ? `${agentPrompt.trim()}\n\n---\n\n${wakePrompt}` : wakePrompt
}
