import type { CostTotals, Period } from '../../contracts/governance.js'

/**
 * Calendar helpers and model-name rules shared by costs, budgets and the dashboard. Every period
 * is a UTC calendar month (`YYYY-MM`); project budgets are lifetime (`all`).
 */

export const lifetime: Period = 'all'

export function monthPeriod(at: Date): Period {
  return at.toISOString().slice(0, 7)
}

export function monthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1))
}

export function nextMonthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1))
}

export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10)
}

export const zeroTotals = (): CostTotals => ({ costCents: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, subscriptionTokens: 0, events: 0, cacheWriteTokens: 0, unpricedTokens: 0 })

/** Percent of a limit used, two decimals; 0 without a limit; 100 for a zero limit (nothing may be spent). */
export function percentOf(used: number, limit: number | null): number {
  if (limit === null) return 0
  if (limit <= 0) return 100
  return Math.round((used / limit) * 10_000) / 100
}

/**
 * Provider from a model name, when the reporter gives none. An explicit `vendor/model` prefix (as
 * routers write it) wins; otherwise the model family decides. Anything unrecognised is `unknown`.
 * docs/costs-and-budgets.md lists the same table.
 */
const families: Array<[RegExp, string]> = [
  [/^claude/, 'anthropic'],
  [/^(gpt|o[1-9]|chatgpt|codex|davinci|babbage|text-embedding|dall-e|whisper|tts-)/, 'openai'],
  [/^(gemini|gemma|palm|bison)/, 'google'],
  [/^(mistral|mixtral|codestral|ministral|magistral|devstral|pixtral)/, 'mistral'],
  [/^(llama|meta-llama)/, 'meta'],
  [/^command/, 'cohere'],
  [/^deepseek/, 'deepseek'],
  [/^grok/, 'xai'],
  [/^(qwen|qwq)/, 'alibaba'],
  [/^(kimi|moonshot)/, 'moonshot'],
  [/^glm/, 'zhipu'],
  [/^(nova|titan)/, 'amazon'],
]

export function providerForModel(model: string): string {
  const name = model.trim().toLowerCase()
  const slash = name.indexOf('/')
  if (slash > 0) {
    const vendor = name.slice(0, slash).replace(/[^a-z0-9_.-]/g, '')
    if (vendor) return vendor
  }
  for (const [pattern, provider] of families) if (pattern.test(name)) return provider
  return 'unknown'
}
