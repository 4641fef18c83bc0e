import type { AdapterWakeInput, AdapterWakeResult, AgentAdapter } from '@slaw/core'

export interface HttpAdapterOptions {
  /** Default URL when an agent's adapter config names none. */
  url?: string
  /** Give up after this long. Default 30 s (the agent acknowledges the wake; it then runs on its own). */
  timeoutMs?: number
}

/**
 * Wakes an agent that runs elsewhere by POSTing the wake to its URL: `{runId, agentId, squadId,
 * issueId, reason, env}`. A 2xx answers `succeeded`, with `usage`/`liveness` from a JSON body if
 * present. Agent config: `{ url, headers? }`.
 */
export function httpAdapter(options: HttpAdapterOptions = {}): AgentAdapter {
  const timeoutMs = options.timeoutMs ?? 30_000
  return {
    type: 'http',
    async wake(input: AdapterWakeInput): Promise<AdapterWakeResult> {
      const url = typeof input.config.url === 'string' ? input.config.url : options.url
      if (!url) return { status: 'failed', error: 'http adapter: no url configured' }
      const headers: Record<string, string> = { 'content-type': 'application/json' }
      if (input.config.headers && typeof input.config.headers === 'object') {
        for (const [k, v] of Object.entries(input.config.headers as Record<string, unknown>)) if (typeof v === 'string') headers[k] = v
      }
      const signal = AbortSignal.any([input.signal, AbortSignal.timeout(timeoutMs)])
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers,
          body: JSON.stringify({ runId: input.runId, agentId: input.agentId, squadId: input.squadId, issueId: input.issueId, reason: input.reason, env: input.env }),
          signal,
        })
        const body = (await res.json().catch(() => ({}))) as Pick<AdapterWakeResult, 'usage' | 'liveness'>
        if (!res.ok) return { status: 'failed', error: `http ${res.status}` }
        return { status: 'succeeded', ...(body.usage ? { usage: body.usage } : {}), ...(body.liveness ? { liveness: body.liveness } : {}) }
      } catch (err) {
        if (input.signal.aborted) return { status: 'cancelled' }
        return { status: 'failed', error: err instanceof Error ? err.message : String(err) }
      }
    },
  } satisfies AgentAdapter
}
