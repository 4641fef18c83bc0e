import type { AdapterUsage } from '@slaw/core'
import { JsonEventStream, isRecord, type JsonEvent } from '@slaw/adapters'

/**
 * What a `claude --print --output-format stream-json --verbose` run said, gathered line by line:
 * - `{"type":"system","subtype":"init","session_id","model","apiKeySource",…}` first;
 * - `{"type":"assistant","message":{"content":[{"type":"text","text"}…],"usage"},"error"?}` per turn;
 * - `{"type":"result","subtype":"success"|"error_max_turns"|"error_during_execution",…,"is_error",
 *   "result"?,"errors"?,"session_id","usage","total_cost_usd","modelUsage"}` last.
 * Per-message usage is never added up: the result's totals are the run's usage.
 */
export class ClaudeStream extends JsonEventStream {
  sessionId: string | undefined
  model: string | undefined
  apiKeySource: string | undefined
  /** The last text an assistant message said. */
  lastText: string | undefined
  /** `error` of the last assistant message (e.g. `authentication_failed`, `rate_limit`). */
  assistantError: string | undefined
  result: Record<string, unknown> | undefined

  protected override event(event: JsonEvent): void {
    if (event.type === 'system' && event.subtype === 'init') {
      if (typeof event.session_id === 'string') this.sessionId = event.session_id
      if (typeof event.model === 'string') this.model = event.model
      if (typeof event.apiKeySource === 'string') this.apiKeySource = event.apiKeySource
    } else if (event.type === 'assistant' && isRecord(event.message)) {
      const content = Array.isArray(event.message.content) ? event.message.content : []
      const texts = content.filter((c): c is { type: 'text'; text: string } => isRecord(c) && c.type === 'text' && typeof c.text === 'string').map((c) => c.text)
      if (texts.length) this.lastText = texts.join('\n')
      if (typeof event.error === 'string') this.assistantError = event.error
      if (!this.model && typeof event.message.model === 'string' && !event.message.model.startsWith('<')) this.model = event.message.model
    } else if (event.type === 'result') {
      this.result = event
      if (typeof event.session_id === 'string') this.sessionId = event.session_id
    }
  }

  /** Everything the run said that could explain a failure, for matching and for the error sentence. */
  errorText(stderr: string): string {
    const r = this.result
    const parts: string[] = []
    if (r) {
      if (Array.isArray(r.errors)) parts.push(...r.errors.filter((e): e is string => typeof e === 'string'))
      if (typeof r.result === 'string') parts.push(r.result)
    }
    if (this.assistantError) parts.push(this.assistantError)
    if (this.lastText && r?.is_error === true) parts.push(this.lastText)
    parts.push(stderr)
    return parts.filter((p) => p.trim()).join('\n')
  }

  /** The run's usage: per model with `modelUsage`, else the result's `usage` and `total_cost_usd`. */
  usage(): AdapterUsage[] {
    const r = this.result
    if (!r) return []
    const billing = this.billing()
    const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.round(v) : 0)
    const cents = (usd: unknown): number | null => (typeof usd === 'number' && Number.isFinite(usd) && usd >= 0 ? Math.round(usd * 100) : null)
    const priced = (costCents: number | null): Pick<AdapterUsage, 'costCents' | 'costStatus'> =>
      costCents === null ? { costCents: null, costStatus: 'unpriced' } : { costCents, costStatus: 'reported' }
    if (isRecord(r.modelUsage) && Object.keys(r.modelUsage).length) {
      return Object.entries(r.modelUsage).flatMap(([model, u]) => {
        if (!isRecord(u)) return []
        return [
          {
            provider: 'anthropic',
            ...billing,
            model,
            inputTokens: count(u.inputTokens),
            cachedInputTokens: count(u.cacheReadInputTokens),
            cacheWriteTokens: count(u.cacheCreationInputTokens),
            outputTokens: count(u.outputTokens),
            ...priced(cents(u.costUSD)),
          },
        ]
      })
    }
    if (!isRecord(r.usage)) return []
    const u = r.usage
    const usage: AdapterUsage = {
      provider: 'anthropic',
      ...billing,
      model: this.model ?? 'unknown',
      inputTokens: count(u.input_tokens),
      cachedInputTokens: count(u.cache_read_input_tokens),
      cacheWriteTokens: count(u.cache_creation_input_tokens),
      outputTokens: count(u.output_tokens),
      ...priced(cents(r.total_cost_usd)),
    }
    const tokens = usage.inputTokens + usage.outputTokens + (usage.cachedInputTokens ?? 0) + (usage.cacheWriteTokens ?? 0)
    // A run that used nothing (not logged in, a session not found) records no usage at all.
    return tokens > 0 || (usage.costCents ?? 0) > 0 ? [usage] : []
  }

  /** An API key bills by use; a Claude login (apiKeySource "none") is a subscription. */
  private billing(): Pick<AdapterUsage, 'billingType' | 'biller'> {
    if (this.apiKeySource === undefined) return { billingType: 'unknown' }
    if (this.apiKeySource === 'none') return { billingType: 'subscription_included', biller: 'anthropic' }
    return { billingType: 'metered_api', biller: 'anthropic' }
  }
}
