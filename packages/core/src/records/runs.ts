import { Type, type StaticDecode } from '@sinclair/typebox'
import { DateTime, Nullable, OneOf, Uuid } from './fields.js'

export const heartbeatRunStatuses = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out'] as const
export type HeartbeatRunStatus = (typeof heartbeatRunStatuses)[number]
export const runLivenessValues = ['completed', 'advanced', 'plan_only', 'empty_response', 'blocked', 'failed', 'needs_followup'] as const
export type HeartbeatRunLiveness = (typeof runLivenessValues)[number]

/** One heartbeat: an agent woken for a reason, from queued to a final status (docs/heartbeats.md). */
export const HeartbeatRunRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  agentId: Uuid,
  issueId: Nullable(Uuid),
  reason: Type.String(),
  status: OneOf(heartbeatRunStatuses),
  liveness: Nullable(OneOf(runLivenessValues)),
  approvalId: Nullable(Uuid),
  commentId: Nullable(Uuid),
  routineRunId: Nullable(Uuid),
  /** Wakes folded into this queued run (coalescing per agent and issue). */
  coalescedCount: Type.Integer(),
  /** 0 for a run woken by an event; n for the n-th liveness continuation in a row. */
  continuationDepth: Type.Integer(),
  nodeId: Nullable(Type.String()),
  startedAt: Nullable(DateTime),
  finishedAt: Nullable(DateTime),
  /** When a running run is overdue (timeout + grace); the deadline sweep ends it `timed_out`. */
  deadlineAt: Nullable(DateTime),
  exitCode: Nullable(Type.Integer()),
  httpStatus: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  summary: Nullable(Type.String()),
  /**
   * What the run used, summed over its usage reports. `costCents` is null when none of it was
   * priced (`costStatus: unpriced`); a run with priced and unpriced parts is `estimated`, and
   * `unpricedTokens` says how many tokens no price covers. `costStatus` is null for a run that
   * reported no usage.
   */
  usage: Type.Object({
    inputTokens: Type.Integer(),
    cachedInputTokens: Type.Integer(),
    cacheWriteTokens: Type.Integer(),
    outputTokens: Type.Integer(),
    unpricedTokens: Type.Integer(),
    costCents: Nullable(Type.Integer()),
    costStatus: Nullable(OneOf(['reported', 'estimated', 'unpriced'] as const)),
    provider: Nullable(Type.String()),
    biller: Nullable(Type.String()),
    billingType: Nullable(Type.String()),
  }),
  /** Why the run failed, for a machine (`auth_required`, `transient_upstream`, …; docs/adapters.md). */
  errorCode: Nullable(Type.String()),
  /** For a `transient_upstream` failure: the earliest time the upstream said a retry can work. */
  retryNotBefore: Nullable(DateTime),
  /** 0 for a run woken by an event; n for the n-th retry after a transient upstream failure. */
  retryAttempt: Type.Integer(),
  /** The CLI session the run resumed or started (claude_local, codex_local), when there was one. */
  sessionId: Nullable(Type.String()),
  /** A bounded tail of the agent's output, kept locally for the operator. */
  outputTail: Nullable(Type.String()),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type HeartbeatRun = StaticDecode<typeof HeartbeatRunRecord>
