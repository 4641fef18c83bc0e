import { Type, type Static } from '@sinclair/typebox'
import { Count, Nullable, ProtocolVersion, Timestamp } from './common.js'
import { Directive } from './directives.js'

/** POST /heartbeat, about every 60 seconds. */
export const HeartbeatRequest = Type.Object({
  protocolVersion: ProtocolVersion,
  sentAt: Timestamp,
  /** `degraded` means running with errors. */
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
  uptimeSec: Count,
  counts: Type.Object({ squads: Count, agents: Count, activeRuns: Count, openIssues: Count }),
  /** todayCents: since UTC midnight; monthCents: month to date. */
  spend: Type.Object({ todayCents: Count, monthCents: Count }),
  /** Null on the first run. */
  lastEventCursor: Nullable(Type.String({ maxLength: 128 })),
  /** Added after the first revision, so optional: the version of the LimitSpec the instance applied. */
  appliedLimitVersion: Type.Optional(Count),
  /** Added after the first revision, so optional: the skill catalog version the instance pulled. */
  appliedSkillCatalogVersion: Type.Optional(Count),
})
export type HeartbeatRequest = Static<typeof HeartbeatRequest>

export const HeartbeatResponse = Type.Object({
  acknowledged: Type.Literal(true),
  directives: Type.Array(Directive),
})
export type HeartbeatResponse = Static<typeof HeartbeatResponse>
