import { Type, type StaticDecode } from '@sinclair/typebox'
import { actorTypes } from './activity.js'
import { DateTime, JsonObject, Nullable, OneOf, Uuid } from './fields.js'

// Records of governance and money: approvals, execution workspaces, cost events, budget incidents.

export const approvalTypes = ['request_board_approval', 'hire_agent'] as const
export type ApprovalType = (typeof approvalTypes)[number]
export const approvalStatuses = ['pending', 'approved', 'rejected', 'revision_requested'] as const
export type ApprovalStatus = (typeof approvalStatuses)[number]

export const ApprovalRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  type: OneOf(approvalTypes),
  status: OneOf(approvalStatuses),
  /** The agent that asked; null when an Operator filed it (an Operator-requested hire). */
  requestedByAgentId: Nullable(Uuid),
  payload: JsonObject(),
  decisionNote: Nullable(Type.String()),
  /** Activity-style actor id of whoever decided (or sent it back), e.g. `operator:<keyId>`. */
  decidedBy: Nullable(Type.String()),
  decidedAt: Nullable(DateTime),
  /** For an approved `hire_agent` approval: the agent it created. */
  hiredAgentId: Nullable(Uuid),
  /** Counts resubmissions: 1 on create, +1 on each resubmit. */
  revision: Type.Integer(),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type Approval = StaticDecode<typeof ApprovalRecord>

export const ApprovalCommentRecord = Type.Object({
  id: Uuid,
  approvalId: Uuid,
  squadId: Uuid,
  body: Type.String(),
  authorType: OneOf(actorTypes),
  authorId: Type.String(),
  createdAt: DateTime,
})
export type ApprovalComment = StaticDecode<typeof ApprovalCommentRecord>

export const WorkspaceRecord = Type.Object({
  id: Uuid,
  projectId: Uuid,
  squadId: Uuid,
  name: Type.String(),
  cwd: Nullable(Type.String()),
  repoUrl: Nullable(Type.String()),
  repoRef: Nullable(Type.String()),
  issueId: Nullable(Uuid),
  status: OneOf(['active', 'archived']),
  metadata: JsonObject(),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type Workspace = StaticDecode<typeof WorkspaceRecord>

export const billingTypes = ['metered_api', 'subscription_included', 'subscription_overage', 'unknown'] as const
export type BillingType = (typeof billingTypes)[number]
/** `reported` by the agent or its CLI, `estimated` from a price table, `unpriced`: nobody knows (cents are 0 then). */
export const costStatuses = ['reported', 'estimated', 'unpriced'] as const
export type CostEventStatus = (typeof costStatuses)[number]

export const CostEventRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  agentId: Uuid,
  issueId: Nullable(Uuid),
  projectId: Nullable(Uuid),
  provider: Type.String(),
  biller: Nullable(Type.String()),
  billingType: OneOf(billingTypes),
  model: Type.String(),
  inputTokens: Type.Integer(),
  cachedInputTokens: Type.Integer(),
  cacheWriteTokens: Type.Integer(),
  outputTokens: Type.Integer(),
  /** Whole cents; 0 when `costStatus` is `unpriced` (the price is unknown, not zero). */
  costCents: Type.Integer(),
  costStatus: OneOf(costStatuses),
  billingCode: Nullable(Type.String()),
  occurredAt: DateTime,
  createdAt: DateTime,
})
export type CostEvent = StaticDecode<typeof CostEventRecord>

export const budgetScopeTypes = ['squad', 'agent', 'project'] as const
export type BudgetScopeType = (typeof budgetScopeTypes)[number]
export const budgetMetrics = ['cents', 'tokens'] as const
export type BudgetMetric = (typeof budgetMetrics)[number]
export const budgetLevels = ['soft', 'hard'] as const
export type BudgetLevel = (typeof budgetLevels)[number]

export const BudgetIncidentRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  scopeType: OneOf(budgetScopeTypes),
  scopeId: Uuid,
  metric: OneOf(budgetMetrics),
  level: OneOf(budgetLevels),
  /** A calendar month `YYYY-MM` (UTC), or `all` (see `Period`). */
  period: Type.String(),
  limitAmount: Type.Integer(),
  observedAmount: Type.Integer(),
  createdAt: DateTime,
  resolvedAt: Nullable(DateTime),
})
export type BudgetIncident = StaticDecode<typeof BudgetIncidentRecord>
