import type { BillingType, Storage } from '@slaw/core'
import type { LimitSpec } from '@slaw/core/ingest'

export interface LimitUsage {
  meteredCents: number
  subscriptionTokens: number
}

/** Start of the current UTC calendar month, and its `YYYY-MM` key. */
export function monthOf(now: Date): { start: Date; key: string } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1))
  return { start, key: start.toISOString().slice(0, 7) }
}

export function dayStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()))
}

const metered = (b: BillingType) => b === 'metered_api'

/**
 * The tower's fleet limit as an extra ceiling (docs/ingest-protocol.md: LimitSpec): metered cost events
 * count against `costLimitCents`, subscription-billed tokens against `tokenLimit`, over the current
 * UTC month. `soft` warns, `hard` also blocks; `off` is no limit. Local budgets are checked by their
 * own guards, so this can only ever add a refusal.
 */
export class LimitEnforcer {
  private usage: LimitUsage | undefined
  private usageAt = 0
  private usageMonth = ''
  private pending: Promise<LimitUsage> | undefined

  constructor(
    private readonly storage: () => Storage | undefined,
    private readonly ttlMs: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Month-to-date usage, read again when older than the ttl (or from another month). */
  async current(force = false): Promise<LimitUsage> {
    const now = this.now()
    const month = monthOf(now)
    if (!force && this.usage && now.getTime() - this.usageAt < this.ttlMs && this.usageMonth === month.key) return this.usage
    const storage = this.storage()
    if (!storage) return { meteredCents: 0, subscriptionTokens: 0 }
    // One read at a time however many checkouts ask at once.
    this.pending ??= storage.towerState
      .limitUsage(month.start)
      .then((u) => {
        this.usage = u
        this.usageAt = now.getTime()
        this.usageMonth = month.key
        return u
      })
      .finally(() => {
        this.pending = undefined
      })
    return this.pending
  }

  /** Share of the ceilings used, in percent: the larger of cost and tokens (0 without ceilings). */
  static percent(spec: LimitSpec, usage: LimitUsage): number {
    const parts: number[] = []
    if (spec.costLimitCents !== null) parts.push(spec.costLimitCents === 0 ? Infinity : (usage.meteredCents / spec.costLimitCents) * 100)
    if (spec.tokenLimit !== null) parts.push(spec.tokenLimit === 0 ? Infinity : (usage.subscriptionTokens / spec.tokenLimit) * 100)
    return parts.length ? Math.max(...parts) : 0
  }

  /** Whether the ceiling that applies to `billingType` (or any ceiling) is reached. */
  static reached(spec: LimitSpec, usage: LimitUsage, billingType?: BillingType): boolean {
    const cost = spec.costLimitCents !== null && usage.meteredCents >= spec.costLimitCents
    const tokens = spec.tokenLimit !== null && usage.subscriptionTokens >= spec.tokenLimit
    if (billingType === undefined) return cost || tokens
    return metered(billingType) ? cost : tokens
  }
}
