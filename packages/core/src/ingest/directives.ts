import { Type, type Static } from '@sinclair/typebox'
import { MAX_SYNC_INTERVAL_SEC, MIN_SYNC_INTERVAL_SEC } from './constants.js'
import { Count, DiscriminatedUnion, Nullable } from './common.js'

/**
 * A fleet budget limit. Metered cost events count against `costLimitCents`, subscription ones against
 * `tokenLimit`; `mode: "off"` clears the limit. `version` is monotonic: an instance applies a limit
 * only when its version is greater than the one it applied last.
 */
export const LimitSpec = Type.Object({
  costLimitCents: Nullable(Count),
  tokenLimit: Nullable(Count),
  window: Type.Literal('calendar_month_utc'),
  warnPercent: Type.Integer({ minimum: 1, maximum: 100, default: 80 }),
  mode: Type.Union([Type.Literal('off'), Type.Literal('soft'), Type.Literal('hard')]),
  version: Type.Integer({ minimum: 1 }),
})
export type LimitSpec = Static<typeof LimitSpec>

export const SetSyncIntervalDirective = Type.Object({
  kind: Type.Literal('set_sync_interval'),
  seconds: Type.Number({ minimum: MIN_SYNC_INTERVAL_SEC, maximum: MAX_SYNC_INTERVAL_SEC }),
})
export const RequestReconciliationDirective = Type.Object({ kind: Type.Literal('request_reconciliation') })
export const RequestLiveStreamDirective = Type.Object({
  kind: Type.Literal('request_live_stream'),
  durationSec: Type.Number({ minimum: 1, maximum: 86_400 }),
})
export const StopLiveStreamDirective = Type.Object({ kind: Type.Literal('stop_live_stream') })
export const SetLimitsDirective = Type.Object({ kind: Type.Literal('set_limits'), limit: LimitSpec })
export const SkillsUpdatedDirective = Type.Object({
  kind: Type.Literal('skills_updated'),
  catalogVersion: Type.Integer({ minimum: 0 }),
})

/** Returned in order in heartbeat and sync responses; the instance processes them in order. */
export const Directive = DiscriminatedUnion('kind', [
  SetSyncIntervalDirective,
  RequestReconciliationDirective,
  RequestLiveStreamDirective,
  StopLiveStreamDirective,
  SetLimitsDirective,
  SkillsUpdatedDirective,
])
export type Directive = Static<typeof Directive>
export type SetSyncIntervalDirective = Static<typeof SetSyncIntervalDirective>
export type RequestLiveStreamDirective = Static<typeof RequestLiveStreamDirective>
export type SetLimitsDirective = Static<typeof SetLimitsDirective>
export type SkillsUpdatedDirective = Static<typeof SkillsUpdatedDirective>
