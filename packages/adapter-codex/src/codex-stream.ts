import type { AdapterUsage } from '@slaw/core'
import { JsonEventStream, isRecord, type JsonEvent } from '@slaw/adapters'

/** Operator prices for Codex models, in US dollars per million tokens. `*` prices any other model. */
export type CodexPriceTable = Record<string, { inputPerMillion: number; cachedInputPerMillion?: number; outputPerMillion: number }>

/**
 * What a `codex exec --json` run said, gathered line by line:
 * - `{"type":"thread.started","thread_id"}` (the session to resume);
 * - `{"type":"turn.started"}`;
 * - `{"type":"item.started"|"item.updated"|"item.completed","item":{"id","type":"agent_message"|"reasoning"|"command_execution"|"error"|…,"text"?,"message"?}}`;
 * - `{"type":"turn.completed","usage":{"input_tokens","cached_input_tokens","output_tokens"}}`;
 * - `{"type":"turn.failed","error":{"message"}}` and `{"type":"error","message"}` (also for
 *   reconnect notices the CLI recovers from: only an error not followed by `turn.completed` counts).
 */
export class CodexStream extends JsonEventStream {
  threadId: string | undefined
  /** The last `agent_message` text: the run's summary. */
  lastMessage: string | undefined
  turnsCompleted = 0
  turnFailed: string | undefined
  /** Error messages since the last completed turn. */
  errors: string[] = []
  input = 0
  cached = 0
  output = 0

  protected override event(event: JsonEvent): void {
    const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.round(v) : 0)
    switch (event.type) {
      case 'thread.started':
        if (typeof event.thread_id === 'string') this.threadId = event.thread_id
        break
      case 'item.completed':
        if (isRecord(event.item) && event.item.type === 'agent_message' && typeof event.item.text === 'string') this.lastMessage = event.item.text
        break
      case 'turn.completed':
        this.turnsCompleted += 1
        this.errors = []
        if (isRecord(event.usage)) {
          this.input += count(event.usage.input_tokens)
          this.cached += count(event.usage.cached_input_tokens)
          this.output += count(event.usage.output_tokens)
        }
        break
      case 'turn.failed':
        this.turnFailed = isRecord(event.error) && typeof event.error.message === 'string' ? event.error.message : 'the turn failed'
        break
      case 'error':
        if (typeof event.message === 'string') this.errors.push(event.message)
        break
    }
  }

  get done(): boolean {
    return this.turnsCompleted > 0 || this.turnFailed !== undefined
  }

  errorText(stderr: string): string {
    return [this.turnFailed ?? '', ...this.errors.slice(-3), stderr].filter((p) => p.trim()).join('\n')
  }

  /**
   * The run's usage. OpenAI counts cached tokens inside `input_tokens`; slaw's `inputTokens` are the
   * uncached ones. Codex reports no cost: unpriced, unless `prices` names the model (estimated).
   */
  usage(model: string | undefined, prices: CodexPriceTable | undefined): AdapterUsage | undefined {
    if (this.input + this.cached + this.output === 0) return undefined
    const cached = Math.min(this.cached, this.input)
    const usage: AdapterUsage = {
      provider: 'openai',
      model: model ?? 'unknown',
      inputTokens: this.input - cached,
      cachedInputTokens: cached,
      outputTokens: this.output,
      costCents: null,
      costStatus: 'unpriced',
      billingType: 'unknown',
    }
    const price = prices?.[usage.model] ?? prices?.['*']
    if (price) {
      const usd = (usage.inputTokens * price.inputPerMillion + cached * (price.cachedInputPerMillion ?? price.inputPerMillion) + usage.outputTokens * price.outputPerMillion) / 1_000_000
      usage.costCents = Math.round(usd * 100)
      usage.costStatus = 'estimated'
    }
    return usage
  }
}
