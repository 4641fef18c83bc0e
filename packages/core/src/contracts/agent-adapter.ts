/**
 * AgentAdapter: how slaw wakes an agent for a heartbeat run. slaw never runs the agent itself; an
 * adapter starts it (a process, an HTTP call, …) with the injected environment and reports back.
 */
export interface AgentAdapter {
  /** The `adapterType` agents name, e.g. `process` or `http`. */
  readonly type: string
  wake(input: AdapterWakeInput): Promise<AdapterWakeResult>
  cancel?(input: { runId: string; agentId: string }): Promise<void>
  close?(): Promise<void>
}

export interface AdapterWakeInput {
  runId: string
  agentId: string
  squadId: string
  issueId: string | null
  reason: string
  /** SVC_API_KEY, SVC_AGENT_ID, SVC_SQUAD_ID, SVC_API_URL, SVC_RUN_ID, SVC_TASK_ID, … */
  env: Record<string, string>
  config: Record<string, unknown>
  signal: AbortSignal
}

export interface AdapterWakeResult {
  status: 'succeeded' | 'failed' | 'cancelled'
  liveness?: 'completed' | 'advanced' | 'plan_only' | 'empty_response' | 'blocked' | 'failed' | 'needs_followup'
  usage?: { model: string; inputTokens: number; cachedInputTokens?: number; outputTokens: number; costCents: number; provider?: string }
  error?: string
}
