import type { TObject } from '@sinclair/typebox'
import type { ErrorDetail } from '../errors.js'

/**
 * AgentAdapter: how slaw wakes an agent for a heartbeat run. slaw never runs the agent itself; an
 * adapter starts it (a process, an HTTP call, …) with the wake environment it is given and reports
 * back. Prove an adapter with `adapterContract` from `@slaw/core/testing`.
 *
 * Rules every adapter keeps (the contract kit checks each):
 * - `wake` never throws for an agent-side failure (command missing, target down, non-zero exit):
 *   it resolves `failed` with an `error` sentence. It throws only for a bug in the adapter itself.
 * - the agent sees exactly `input.env` (the run token, the wake variables and resolved bindings) and
 *   nothing of the server's own environment.
 * - `timeoutMs` is enforced by the adapter: past it the agent is stopped and the result is `timed_out`.
 * - when `signal` aborts (cancel, node shutdown), the agent is stopped and the result is `cancelled`.
 * - output kept for the operator is bounded (`output`, a tail) and never sent to the tower.
 */
export interface AgentAdapter {
  /** The `adapterType` agents name, e.g. `process` or `http`. */
  readonly type: string
  /**
   * The config's TypeBox schema, when the adapter declares one (`defineAgentAdapter` from
   * `@slaw/core` makes such an adapter). slaw checks every written config against it (defaults
   * applied), besides `validateConfig`, and reads `timeoutSec`/`graceSec` defaults from it. An adapter
   * with a schema applies its defaults to `input.config` itself before it reads it (the helper does;
   * the contract kit checks it): `input.config` is the config as stored.
   */
  readonly configSchema?: TObject
  /**
   * Checks an agent's `adapterConfig` when it is written (agent create, hire, PATCH); problems answer
   * 400 `invalid_payload` with these details, together with what `configSchema` refuses. Omit both to
   * accept any object. Detail paths point inside the config (`/command`); the caller prefixes where
   * the config sits (`/adapterConfig/command`).
   */
  validateConfig?(config: Record<string, unknown>): ErrorDetail[]
  wake(input: AdapterWakeInput): Promise<AdapterWakeResult>
  /**
   * Checks that the agent could run here (command found, its version, logged in), for
   * `POST /api/agents/{id}/check-environment`. Optional: an adapter without it answers 4xx there.
   */
  checkEnvironment?(config: Record<string, unknown>): Promise<AdapterEnvironmentReport>
  /** Releases what the adapter holds (child processes, sockets) when the instance closes. */
  close?(): Promise<void>
}

/** A CLI's saved conversation: `id` is the CLI's own session (thread) id, `key` what it was saved under. */
export interface AdapterSession {
  id: string
  /** The engine's key: agent, adapter type, cwd and model. A session resumes only under the same key. */
  key: string
}

/** What a wake is about, for adapters that write the agent's prompt themselves (the CLI adapters). */
export interface AdapterWakeContext {
  /** The agent's own instructions (its `prompt`), used as the CLI's system prompt. */
  agentPrompt?: string | null
  agentName?: string
  issue?: { id: string; identifier: string; title: string; description: string | null; status: string } | null
  /** The comment that woke the agent (a mention), when there was one. */
  comment?: { id: string; body: string; authorName: string | null } | null
}

export interface AdapterOutputChunk {
  stream: 'stdout' | 'stderr'
  text: string
}

export interface AdapterEnvironmentCheck {
  name: string
  status: 'ok' | 'warn' | 'fail'
  message: string
}

export interface AdapterEnvironmentReport {
  /** False when any check failed. */
  ok: boolean
  checks: AdapterEnvironmentCheck[]
}

/** `C`: the config's type; `Record<string, unknown>` (the config as stored) unless the adapter declares a schema. */
export interface AdapterWakeInput<C = Record<string, unknown>> {
  runId: string
  agentId: string
  squadId: string
  issueId: string | null
  reason: string
  /** The whole environment of the agent: SVC_API_KEY (the run token), SVC_AGENT_ID, SVC_SQUAD_ID, SVC_API_URL, SVC_RUN_ID, SVC_TASK_ID, SVC_APPROVAL_ID, SVC_WAKE_COMMENT_ID, and resolved bindings. */
  env: Record<string, string>
  /**
   * The agent's `adapterConfig` as stored (its `env` bindings are already resolved into `env`). Typed
   * by the schema, with its defaults applied, inside a `defineAgentAdapter` wake.
   */
  config: C
  /** Past this the adapter stops the agent and answers `timed_out`. */
  timeoutMs: number
  /** After asking the agent to stop, how long to wait before killing it. */
  graceMs: number
  /** Per-agent secret for signing outbound wakes (the http adapter's X-Svc-Signature), when the agent has one. */
  signingSecret?: string
  /** Aborted on cancel or node shutdown: stop the agent and answer `cancelled`. */
  signal: AbortSignal
  /**
   * The saved session the engine found for this agent, adapter type, cwd and model, to resume; null
   * or absent: start fresh. At most one running run of an agent holds a session at a time.
   */
  session?: AdapterSession | null
  /** The wake's issue, comment and the agent's prompt, for adapters that build a prompt. */
  context?: AdapterWakeContext
  /**
   * Live output as it arrives (the process and CLI adapters call it for every chunk). Must not
   * throw; what it does with the text (live events) is the caller's business. Secrets scrubbing is too.
   */
  onOutput?(chunk: AdapterOutputChunk): void
}

export type RunLiveness = 'completed' | 'advanced' | 'plan_only' | 'empty_response' | 'blocked' | 'failed' | 'needs_followup'

export type AdapterBillingType = 'metered_api' | 'subscription_included' | 'subscription_overage' | 'unknown'
/** `reported`: the agent or its CLI said what it cost; `estimated`: priced from a table; `unpriced`: nobody knows. */
export type CostStatus = 'reported' | 'estimated' | 'unpriced'

/**
 * What a run used. Cost never lies: a run whose price nobody knows has `costCents: null` and
 * `costStatus: 'unpriced'`, never 0. `inputTokens` excludes cached reads and cache writes.
 */
export interface AdapterUsage {
  provider?: string
  /** Who bills, when not the provider (a router, a subscription). */
  biller?: string
  model: string
  inputTokens: number
  /** Input tokens read from the provider's prompt cache. */
  cachedInputTokens?: number
  /** Input tokens written to the provider's prompt cache. */
  cacheWriteTokens?: number
  outputTokens: number
  /** Whole cents; null when the usage is unpriced. */
  costCents: number | null
  /** Default: `reported` when costCents is a number, `unpriced` when null. */
  costStatus?: CostStatus
  billingType?: AdapterBillingType
}

/** Machine-readable reasons a run failed (the CLI adapters set them; others may add their own). */
export type AdapterErrorCode = 'auth_required' | 'session_not_found' | 'max_turns' | 'transient_upstream' | 'timeout' | 'unparseable_output' | 'command_not_found' | (string & {})

export interface AdapterWakeResult {
  /**
   * `accepted`: the agent was reached and will finish the run itself by reporting `final: true` to
   * `POST /api/heartbeat-runs/{runId}/report` (the run stays `running` until then or its timeout).
   */
  status: 'succeeded' | 'failed' | 'cancelled' | 'timed_out' | 'accepted'
  /** A process's exit code, when there was one. */
  exitCode?: number | null
  /** The HTTP status the agent's endpoint answered, when there was one. */
  httpStatus?: number | null
  /** A bounded tail of the agent's output, kept locally for the operator. */
  output?: string
  liveness?: RunLiveness
  /** What the run used; several entries for a run that used several models (one cost event each). */
  usage?: AdapterUsage | AdapterUsage[]
  /** One sentence saying what went wrong, for `failed`, `timed_out` and `cancelled`. */
  error?: string
  /** Why, for a machine: `transient_upstream` runs are retried (at `retryNotBefore` when given). */
  errorCode?: AdapterErrorCode
  /** The earliest time a retry can succeed (a rate limit's reset time). */
  retryNotBefore?: Date
  /**
   * The session to save for the next wake (only with `succeeded`); null: forget the saved one (it
   * was not found); absent: keep what was saved.
   */
  session?: AdapterSession | null
  /** The agent's final words (a CLI's final text), kept as the run's summary. */
  summary?: string
}
