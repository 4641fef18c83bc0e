import type { ColumnType, Generated, RawBuilder } from 'kysely'

/** Tables of migration 0002-governance (camelCase; see schema.ts). */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>
type CreatedAt = ColumnType<Date, Date | string | undefined, never>
type Json<T> = ColumnType<T, RawBuilder<unknown>, RawBuilder<unknown>>
/** Counters that SQL adds to; never written as plain values by the application. */
type Counter = ColumnType<number, number | undefined, number | RawBuilder<unknown>>

export interface ApprovalsTable {
  id: string
  squadId: string
  type: string
  status: Generated<string>
  requestedByAgentId: string | null
  payload: Json<Record<string, unknown>>
  decisionNote: string | null
  decidedBy: string | null
  decidedAt: Date | null
  hiredAgentId: string | null
  revision: ColumnType<number, number | undefined, number | RawBuilder<unknown>>
  createdAt: CreatedAt
  updatedAt: Timestamp
}

export interface ApprovalIssuesTable {
  approvalId: string
  issueId: string
}

export interface ApprovalCommentsTable {
  id: string
  approvalId: string
  squadId: string
  body: string
  authorType: string
  authorId: string
  createdAt: CreatedAt
}

export interface WorkspacesTable {
  id: string
  projectId: string
  squadId: string
  name: string
  cwd: string | null
  repoUrl: string | null
  repoRef: string | null
  issueId: string | null
  status: Generated<string>
  metadata: Json<Record<string, unknown>>
  createdAt: CreatedAt
  updatedAt: Timestamp
}

export interface CostEventsTable {
  id: string
  squadId: string
  agentId: string
  issueId: string | null
  projectId: string | null
  provider: string
  biller: string | null
  billingType: string
  model: string
  inputTokens: number
  cachedInputTokens: number
  outputTokens: number
  costCents: number
  billingCode: string | null
  occurredAt: Date
  createdAt: CreatedAt
}

export interface CostRollupsTable {
  squadId: string
  period: string
  scope: string
  scopeKey: string
  costCents: Counter
  inputTokens: Counter
  cachedInputTokens: Counter
  outputTokens: Counter
  subscriptionTokens: Counter
  events: Counter
}

export interface BudgetIncidentsTable {
  id: string
  squadId: string
  scopeType: string
  scopeId: string
  metric: string
  level: string
  period: string
  limitAmount: number
  observedAmount: number
  createdAt: CreatedAt
  resolvedAt: Date | null
}

export interface IssueStatusCountsTable {
  squadId: string
  status: string
  shard: number
  n: Counter
}

export interface GovernanceTables {
  approvals: ApprovalsTable
  approvalIssues: ApprovalIssuesTable
  approvalComments: ApprovalCommentsTable
  workspaces: WorkspacesTable
  costEvents: CostEventsTable
  costRollups: CostRollupsTable
  budgetIncidents: BudgetIncidentsTable
  issueStatusCounts: IssueStatusCountsTable
}
