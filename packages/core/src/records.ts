/**
 * Domain records as services see them: camelCase, dates as `Date`, money in integer cents.
 * Storage implementations return exactly these shapes.
 */

export type SquadStatus = 'active' | 'archived'
export interface Squad {
  id: string
  name: string
  slug: string
  status: SquadStatus
  issuePrefix: string
  budgetMonthlyCents: number | null
  budgetHardStop: boolean
  createdAt: Date
  updatedAt: Date
}

export type AgentStatus = 'active' | 'paused' | 'terminated' | 'running' | 'error'
export interface Agent {
  id: string
  squadId: string
  name: string
  role: string
  title: string | null
  status: AgentStatus
  adapterType: string
  reportsToAgentId: string | null
  prompt: string | null
  desiredSkills: string[]
  permissions: Record<string, unknown>
  instructionsPath: string | null
  runtimeState: Record<string, unknown>
  budgetMonthlyCents: number | null
  pauseReason: string | null
  /** How the agent's adapter reaches it (operator only: never shown to agents, activity or the tower). */
  adapterConfig: Record<string, unknown>
  createdAt: Date
  updatedAt: Date
}

export interface ApiKeyRecord {
  id: string
  kind: 'operator' | 'agent'
  name: string
  agentId: string | null
  squadId: string | null
  tokenHash: string
  createdAt: Date
  expiresAt: Date | null
  revokedAt: Date | null
  lastUsedAt: Date | null
}

export const issueStatuses = ['backlog', 'todo', 'in_progress', 'in_review', 'blocked', 'done', 'cancelled'] as const
export type IssueStatus = (typeof issueStatuses)[number]
export const issuePriorities = ['critical', 'high', 'medium', 'low'] as const
export type IssuePriority = (typeof issuePriorities)[number]

export interface Issue {
  id: string
  squadId: string
  number: number
  identifier: string
  title: string
  description: string | null
  status: IssueStatus
  priority: IssuePriority
  assigneeAgentId: string | null
  assigneeUserId: string | null
  checkoutAgentId: string | null
  checkedOutAt: Date | null
  parentId: string | null
  goalId: string | null
  projectId: string | null
  billingCode: string | null
  createdAt: Date
  updatedAt: Date
}

/** The short form lists and inboxes return. */
export interface IssueSummary {
  id: string
  identifier: string
  title: string
  status: IssueStatus
  priority: IssuePriority
  assigneeAgentId: string | null
}

export interface IssueRef {
  id: string
  identifier: string
  title: string
  status: IssueStatus
}

export interface Comment {
  id: string
  issueId: string
  squadId: string
  body: string
  authorType: ActorType
  authorId: string
  createdAt: Date
}

export interface IssueDocument {
  id: string
  issueId: string
  key: string
  title: string
  format: 'markdown'
  body: string
  revisionId: string
  createdAt: Date
  updatedAt: Date
}

export type InteractionKind = 'request_confirmation' | 'suggest_tasks' | 'ask_user_questions'
export type InteractionStatus = 'pending' | 'accepted' | 'rejected' | 'responded'
export interface Interaction {
  id: string
  issueId: string
  squadId: string
  kind: InteractionKind
  payload: Record<string, unknown>
  continuationPolicy: 'wake_assignee' | null
  idempotencyKey: string | null
  status: InteractionStatus
  response: Record<string, unknown> | null
  createdByType: ActorType
  createdById: string
  resolvedAt: Date | null
  createdAt: Date
}

export type ActorType = 'agent' | 'user' | 'system' | 'plugin'
export interface ActivityEntry {
  id: string
  squadId: string
  actorType: ActorType
  actorId: string
  action: string
  entityType: string
  entityId: string
  agentId: string | null
  runId: string | null
  details: Record<string, unknown> | null
  createdAt: Date
}

/** A row of the transactional outbox the tower client drains; `seq` orders everything. */
export interface OutboxEntry {
  seq: string
  kind: 'upsert' | 'fact'
  entityType: string
  entityId: string
  squadId: string | null
  payload: Record<string, unknown>
  createdAt: Date
}

export type JobStatus = 'queued' | 'running' | 'completed' | 'failed'
export interface Job {
  id: string
  kind: string
  squadId: string | null
  payload: Record<string, unknown>
  status: JobStatus
  attempts: number
  /** After this many attempts a failing job stays `failed`. */
  maxAttempts: number
  /** Unique among unfinished jobs of the same kind, when set. */
  dedupeKey: string | null
  runAt: Date
  lockedBy: string | null
  lockedUntil: Date | null
  result: Record<string, unknown> | null
  error: string | null
  createdAt: Date
  finishedAt: Date | null
}

export interface AgentWakeup {
  id: string
  squadId: string
  agentId: string
  issueId: string | null
  reason: string
  status: 'queued' | 'delivered' | 'dropped'
  createdAt: Date
}

export type GoalStatus = 'draft' | 'in_progress' | 'done'
export interface Goal {
  id: string
  squadId: string
  title: string
  description: string | null
  status: GoalStatus
  dueDate: string | null
  createdAt: Date
  updatedAt: Date
}

export interface Project {
  id: string
  squadId: string
  name: string
  description: string | null
  status: string
  goalId: string | null
  budgetCents: number | null
  pausedAt: Date | null
  pauseReason: 'budget' | 'manual' | null
  createdAt: Date
  updatedAt: Date
}

export const heartbeatRunStatuses = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out'] as const
export type HeartbeatRunStatus = (typeof heartbeatRunStatuses)[number]
export const runLivenessValues = ['completed', 'advanced', 'plan_only', 'empty_response', 'blocked', 'failed', 'needs_followup'] as const
export type HeartbeatRunLiveness = (typeof runLivenessValues)[number]

/** One heartbeat: an agent woken for a reason, from queued to a final status (docs/heartbeats.md). */
export interface HeartbeatRun {
  id: string
  squadId: string
  agentId: string
  issueId: string | null
  reason: string
  status: HeartbeatRunStatus
  liveness: HeartbeatRunLiveness | null
  approvalId: string | null
  commentId: string | null
  routineRunId: string | null
  /** Wakes folded into this queued run (coalescing per agent and issue). */
  coalescedCount: number
  /** 0 for a run woken by an event; n for the n-th liveness continuation in a row. */
  continuationDepth: number
  nodeId: string | null
  startedAt: Date | null
  finishedAt: Date | null
  /** When a running run is overdue (timeout + grace); the deadline sweep ends it `timed_out`. */
  deadlineAt: Date | null
  exitCode: number | null
  httpStatus: number | null
  error: string | null
  summary: string | null
  usage: { inputTokens: number; outputTokens: number; costCents: number }
  /** A bounded tail of the agent's output, kept locally for the operator. */
  outputTail: string | null
  createdAt: Date
  updatedAt: Date
}
