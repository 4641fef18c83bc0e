import type { AdapterUsage, AdapterWakeResult, RunLiveness } from '@slaw/core'
import { isRecord } from './config-checks.js'

const livenessValues: readonly RunLiveness[] = ['completed', 'advanced', 'plan_only', 'empty_response', 'blocked', 'failed', 'needs_followup']
const billingTypes = ['metered_api', 'subscription_included', 'subscription_overage', 'unknown'] as const
const costStatuses = ['reported', 'estimated', 'unpriced'] as const

/**
 * The optional last-line report of a process agent: when the last non-empty line of its stdout is
 * `{"slawReport": {"liveness"?: …, "usage"?: {model, inputTokens, outputTokens, costCents, …}}}`,
 * its well-formed parts become the result's `liveness` and `usage`. Anything else is ignored: an
 * agent's ordinary JSON logs can never be mistaken for a report. Agents normally report over the API
 * (`POST /api/heartbeat-runs/{runId}/report`); this is for a command that cannot make HTTP calls.
 */
export function parseLastLineReport(stdoutTail: string): Pick<AdapterWakeResult, 'usage' | 'liveness'> {
  const last = stdoutTail.trimEnd().split('\n').pop()?.trim()
  if (!last?.startsWith('{')) return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(last)
  } catch {
    return {}
  }
  if (!isRecord(parsed) || !isRecord(parsed.slawReport)) return {}
  const report = parsed.slawReport
  const out: Pick<AdapterWakeResult, 'usage' | 'liveness'> = {}
  if (typeof report.liveness === 'string' && (livenessValues as readonly string[]).includes(report.liveness)) out.liveness = report.liveness as RunLiveness
  const usage = parseUsage(report.usage)
  if (usage) out.usage = usage
  return out
}

function parseUsage(value: unknown): AdapterUsage | undefined {
  if (!isRecord(value)) return undefined
  const count = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0
  // costCents null: the agent does not know what it cost (recorded unpriced, never as 0).
  if (typeof value.model !== 'string' || !count(value.inputTokens) || !count(value.outputTokens) || !(value.costCents === null || count(value.costCents))) return undefined
  const usage: AdapterUsage = { model: value.model, inputTokens: value.inputTokens, outputTokens: value.outputTokens, costCents: value.costCents }
  if (value.costCents === null) usage.costStatus = 'unpriced'
  else if (typeof value.costStatus === 'string' && (costStatuses as readonly string[]).includes(value.costStatus) && value.costStatus !== 'unpriced')
    usage.costStatus = value.costStatus as AdapterUsage['costStatus']
  if (count(value.cacheWriteTokens)) usage.cacheWriteTokens = value.cacheWriteTokens
  if (typeof value.biller === 'string') usage.biller = value.biller
  if (typeof value.provider === 'string') usage.provider = value.provider
  if (count(value.cachedInputTokens)) usage.cachedInputTokens = value.cachedInputTokens
  if (typeof value.billingType === 'string' && (billingTypes as readonly string[]).includes(value.billingType)) usage.billingType = value.billingType as AdapterUsage['billingType']
  return usage
}
