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
   * Checks an agent's `adapterConfig` when it is written (agent create, hire, PATCH); problems answer
   * 400 `invalid_payload` with these details. Omit to accept any object. Detail paths point inside
   * the config (`/command`); the caller prefixes where the config sits (`/adapterConfig/command`).
   */
  validateConfig?(config: Record<string, unknown>): ErrorDetail[]
  wake(input: AdapterWakeInput): Promise<AdapterWakeResult>
  /** Releases what the adapter holds (child processes, sockets) when the instance closes. */
  close?(): Promise<void>
}

export interface AdapterWakeInput {
  runId: string
  agentId: string
  squadId: string
  issueId: string | null
  reason: string
  /** The whole environment of the agent: SVC_API_KEY (the run token), SVC_AGENT_ID, SVC_SQUAD_ID, SVC_API_URL, SVC_RUN_ID, SVC_TASK_ID, SVC_APPROVAL_ID, SVC_WAKE_COMMENT_ID, and resolved bindings. */
  env: Record<string, string>
  /** The agent's `adapterConfig` (its `env` bindings are already resolved into `env`). */
  config: Record<string, unknown>
  /** Past this the adapter stops the agent and answers `timed_out`. */
  timeoutMs: number
  /** After asking the agent to stop, how long to wait before killing it. */
  graceMs: number
  /** Per-agent secret for signing outbound wakes (the http adapter's X-Svc-Signature), when the agent has one. */
  signingSecret?: string
  /** Aborted on cancel or node shutdown: stop the agent and answer `cancelled`. */
  signal: AbortSignal
}

export type RunLiveness = 'completed' | 'advanced' | 'plan_only' | 'empty_response' | 'blocked' | 'failed' | 'needs_followup'

export interface AdapterUsage {
  provider?: string
  model: string
  inputTokens: number
  cachedInputTokens?: number
  outputTokens: number
  costCents: number
  billingType?: 'metered_api' | 'subscription_included' | 'subscription_overage'
}

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
  usage?: AdapterUsage
  /** One sentence saying what went wrong, for `failed`, `timed_out` and `cancelled`. */
  error?: string
}
