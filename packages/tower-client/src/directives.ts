import { Value } from '@sinclair/typebox/value'
import { uuidv7 } from '@slaw/core'
import { Directive, MAX_SYNC_INTERVAL_SEC, MIN_SYNC_INTERVAL_SEC } from '@slaw/core/ingest'
import { LimitEnforcer, monthOf } from './limits.js'
import type { LiveControl } from './live-control.js'
import type { Reporter } from './reporter.js'

type LimitAlert = 'tower.limit_warning' | 'tower.limit_reached'

/**
 * The tower's directives (heartbeat and sync answers), applied one by one in the order given, and
 * the fleet limit's alerts. A directive this client does not know is skipped.
 */
export class Directives {
  constructor(
    private readonly r: Reporter,
    private readonly limits: LimitEnforcer,
    private readonly live: LiveControl,
  ) {}

  async apply(list: unknown): Promise<void> {
    if (!Array.isArray(list)) return
    for (const raw of list) {
      const d = raw as Record<string, unknown>
      // The 10–3600 s bound is the directive's own (the configured cadence may be shorter).
      if (d && d.kind === 'set_sync_interval' && typeof d.seconds === 'number') {
        d.seconds = Math.min(MAX_SYNC_INTERVAL_SEC, Math.max(MIN_SYNC_INTERVAL_SEC, d.seconds))
      }
      if (!Value.Check(Directive, d)) {
        this.r.ctx.log.warn({ kind: typeof d?.kind === 'string' ? d.kind : null }, 'tower directive not understood; skipped')
        continue
      }
      await this.applyOne(d as Directive)
    }
  }

  private async applyOne(directive: Directive): Promise<void> {
    const { store, ctx } = this.r
    switch (directive.kind) {
      case 'set_sync_interval':
        await store.save({ syncIntervalSec: directive.seconds })
        ctx.log.info({ seconds: directive.seconds }, 'tower set the sync interval')
        break
      case 'request_reconciliation':
        await store.save({ manifest: { lastAt: store.data.manifest?.lastAt ?? null, requested: true } })
        break
      case 'request_live_stream':
        this.live.open(directive.durationSec)
        break
      case 'stop_live_stream':
        this.live.close('the tower asked to stop')
        break
      case 'set_limits': {
        const applied = store.data.limit?.version ?? 0
        if (directive.limit.version <= applied) break
        await store.save({ limit: directive.limit })
        await this.limits.current(true)
        ctx.log.info({ version: directive.limit.version, mode: directive.limit.mode }, 'tower fleet limit applied')
        break
      }
      case 'skills_updated':
        if (directive.catalogVersion > (store.data.skillsHint ?? -1)) await store.save({ skillsHint: directive.catalogVersion })
        break
    }
  }

  /** Raises the warning at warnPercent and the ceiling alert at 100 %, once per limit version and month. */
  async limitAlerts(): Promise<void> {
    const { store, ctx } = this.r
    const spec = store.data.limit
    if (!spec || spec.mode === 'off') return
    // The same cached figures checkouts use (read again at most every limitUsageTtlMs).
    const usage = await this.limits.current()
    const percent = LimitEnforcer.percent(spec, usage)
    const tag = `${spec.version}:${monthOf(new Date()).key}`
    const alerts = { warned: null, reached: null, ...(store.data.limitAlerts ?? {}) }
    const raise: LimitAlert[] = []
    if (percent >= spec.warnPercent && alerts.warned !== tag) {
      raise.push('tower.limit_warning')
      alerts.warned = tag
    }
    if (percent >= 100 && alerts.reached !== tag) {
      raise.push('tower.limit_reached')
      alerts.reached = tag
    }
    if (!raise.length) return
    const details = {
      limitVersion: spec.version,
      mode: spec.mode,
      percentUsed: Number.isFinite(percent) ? Math.round(percent) : 100,
      costLimitCents: spec.costLimitCents,
      tokenLimit: spec.tokenLimit,
      meteredCents: usage.meteredCents,
      subscriptionTokens: usage.subscriptionTokens,
    }
    await ctx.storage.transaction(async (tx) => {
      for (const squad of await tx.squads.list()) {
        for (const action of raise) {
          await tx.activity.insert({
            id: uuidv7(),
            squadId: squad.id,
            actorType: 'system',
            actorId: 'tower',
            action,
            entityType: 'tower_limit',
            entityId: String(spec.version),
            agentId: null,
            runId: null,
            details,
          })
        }
      }
      await tx.towerState.put({ limitAlerts: alerts })
    })
    store.data.limitAlerts = alerts
    ctx.log.warn(details, raise.includes('tower.limit_reached') ? 'tower fleet limit reached' : 'tower fleet limit warning')
  }
}
