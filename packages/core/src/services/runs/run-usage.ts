import type { AdapterBillingType, AdapterUsage, CostStatus } from '../../contracts/agent-adapter.js'
import type { RunUsageDelta } from '../../contracts/storage.js'
import type { HeartbeatRun } from '../../records.js'

const billingTypes: readonly AdapterBillingType[] = ['metered_api', 'subscription_included', 'subscription_overage', 'unknown']

/** One usage report, cleaned: whole non-negative tokens, a cost status that matches its cents. */
export interface CleanUsage extends RunUsageDelta {
  cachedInputTokens: number
  cacheWriteTokens: number
  unpricedTokens: number
  costStatus: CostStatus
  provider: string | null
  biller: string | null
  billingType: AdapterBillingType | null
}

/**
 * What a usage report adds: tokens as they are; cents only when priced. A report without cents
 * (`costCents: null`) or marked `unpriced` is unpriced whatever else it says, and its tokens are
 * counted as unpriced: 0 cents is never shown for a cost nobody knows.
 */
export function usageDelta(usage: AdapterUsage): CleanUsage {
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0)
  const priced = typeof usage.costCents === 'number' && Number.isFinite(usage.costCents) && usage.costStatus !== 'unpriced'
  const costStatus: CostStatus = !priced ? 'unpriced' : usage.costStatus === 'estimated' ? 'estimated' : 'reported'
  const d = {
    inputTokens: n(usage.inputTokens),
    cachedInputTokens: n(usage.cachedInputTokens),
    cacheWriteTokens: n(usage.cacheWriteTokens),
    outputTokens: n(usage.outputTokens),
  }
  return {
    ...d,
    costCents: priced ? n(usage.costCents) : 0,
    costStatus,
    unpricedTokens: priced ? 0 : d.inputTokens + d.cachedInputTokens + d.cacheWriteTokens + d.outputTokens,
    provider: typeof usage.provider === 'string' && usage.provider.trim() ? usage.provider.trim().toLowerCase() : null,
    biller: typeof usage.biller === 'string' && usage.biller.trim() ? usage.biller.trim().toLowerCase() : null,
    billingType: typeof usage.billingType === 'string' && billingTypes.includes(usage.billingType) ? usage.billingType : null,
  }
}

/** When a `transient_upstream` run is tried again: the time the upstream named, else backoff (doubling, at most an hour). */
export function upstreamRetryAt(run: Pick<HeartbeatRun, 'retryNotBefore' | 'retryAttempt'>, now: Date, baseMs: number): Date {
  if (run.retryNotBefore && run.retryNotBefore.getTime() > now.getTime()) return run.retryNotBefore
  return new Date(now.getTime() + Math.min(3_600_000, baseMs * 2 ** run.retryAttempt))
}
