import { Type, type Static } from '@sinclair/typebox'
import { HeartbeatRunRecord, heartbeatRunStatuses, runLivenessValues, type HeartbeatRun, type IssueSummary } from '../records.js'
import type { AgentRunState } from '../services/runs/runs.js'
import { CommaList, Nullable, Timestamp, Uuid, iso, isoOrNull } from './common.js'

const Liveness = Type.Union(runLivenessValues.map((s) => Type.Literal(s)))

// The engine's bookkeeping (node, deadline, routine run, last update) stays internal.
const runFields = Type.Omit(HeartbeatRunRecord, ['routineRunId', 'nodeId', 'deadlineAt', 'updatedAt']).properties
export const HeartbeatRunSchema = Type.Object(
  {
    ...runFields,
    /** Operator only: the tail of the agent's output, kept locally. */
    outputTail: Type.Optional(runFields.outputTail),
  },
  { $id: 'HeartbeatRun', title: 'HeartbeatRun' },
)

export const RunBody = Type.Object({ run: HeartbeatRunSchema })
export const RunParams = Type.Object({ runId: Type.String({ maxLength: 200 }) })

export const WakeBody = Type.Object(
  {
    reason: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    issueId: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  },
  { additionalProperties: false },
)

export const RunListQuery = Type.Object(
  {
    agentId: Type.Optional(Type.String({ maxLength: 200 })),
    status: Type.Optional(CommaList(heartbeatRunStatuses.join('|'))),
    cursor: Type.Optional(Type.String({ maxLength: 200 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })),
  },
  { additionalProperties: false },
)

export const RunReportBody = Type.Object(
  {
    liveness: Type.Optional(Liveness),
    usage: Type.Optional(
      Type.Object(
        {
          provider: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
          model: Type.String({ minLength: 1, maxLength: 200 }),
          inputTokens: Type.Integer({ minimum: 0, maximum: 1_000_000_000 }),
          outputTokens: Type.Integer({ minimum: 0, maximum: 1_000_000_000 }),
          cachedInputTokens: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
          cacheWriteTokens: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
          /** null: nobody knows what it cost (recorded `unpriced`, never as 0). */
          costCents: Nullable(Type.Integer({ minimum: 0, maximum: 100_000_000 })),
          costStatus: Type.Optional(Type.Union([Type.Literal('reported'), Type.Literal('estimated'), Type.Literal('unpriced')])),
          biller: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
          billingType: Type.Optional(Type.Union([Type.Literal('metered_api'), Type.Literal('subscription_included'), Type.Literal('subscription_overage'), Type.Literal('unknown')])),
        },
        { additionalProperties: false },
      ),
    ),
    summary: Type.Optional(Type.String({ maxLength: 10_000 })),
    final: Type.Optional(Type.Boolean()),
    error: Type.Optional(Type.String({ minLength: 1, maxLength: 2_000 })),
  },
  { additionalProperties: false },
)

export const TouchedIssue = Type.Object(
  { id: Uuid, identifier: Type.String(), title: Type.String(), status: Type.String(), priority: Type.String(), assigneeAgentId: Nullable(Uuid) },
  { $id: 'TouchedIssue', title: 'TouchedIssue' },
)

export const RuntimeStateSchema = Type.Object(
  {
    agentId: Uuid,
    status: Type.String(),
    pauseReason: Nullable(Type.String()),
    state: Type.Record(Type.String(), Type.Unknown()),
    updatedAt: Timestamp,
    runningRuns: Type.Array(HeartbeatRunSchema),
    queuedRuns: Type.Integer(),
    lastRun: Nullable(HeartbeatRunSchema),
  },
  { $id: 'AgentRuntimeState', title: 'AgentRuntimeState' },
)

export const EnvironmentCheckSchema = Type.Object({
  adapterType: Type.String(),
  /** False when any check failed. */
  ok: Type.Boolean(),
  checks: Type.Array(Type.Object({ name: Type.String(), status: Type.Union([Type.Literal('ok'), Type.Literal('warn'), Type.Literal('fail')]), message: Type.String() })),
})

/** Fields are listed, not spread: the output tail is the Operator's, and internal columns stay out. */
export const presentRun = (r: HeartbeatRun, withOutput = false): Static<typeof HeartbeatRunSchema> => ({
  id: r.id,
  squadId: r.squadId,
  agentId: r.agentId,
  issueId: r.issueId,
  reason: r.reason,
  status: r.status,
  liveness: r.liveness,
  approvalId: r.approvalId,
  commentId: r.commentId,
  coalescedCount: r.coalescedCount,
  continuationDepth: r.continuationDepth,
  startedAt: isoOrNull(r.startedAt),
  finishedAt: isoOrNull(r.finishedAt),
  exitCode: r.exitCode,
  httpStatus: r.httpStatus,
  error: r.error,
  summary: r.summary,
  usage: r.usage,
  errorCode: r.errorCode,
  retryNotBefore: isoOrNull(r.retryNotBefore),
  retryAttempt: r.retryAttempt,
  sessionId: r.sessionId,
  ...(withOutput ? { outputTail: r.outputTail } : {}),
  createdAt: iso(r.createdAt),
})

export const presentTouched = (i: IssueSummary) => ({ id: i.id, identifier: i.identifier, title: i.title, status: i.status, priority: i.priority, assigneeAgentId: i.assigneeAgentId })

export const presentRuntimeState = (s: AgentRunState) => ({
  agentId: s.agentId,
  status: s.status,
  pauseReason: s.pauseReason,
  state: s.state,
  updatedAt: iso(s.updatedAt),
  runningRuns: s.runningRuns.map((r) => presentRun(r)),
  queuedRuns: s.queuedRuns,
  lastRun: s.lastRun ? presentRun(s.lastRun) : null,
})
