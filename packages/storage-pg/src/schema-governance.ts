import type { Approval, ApprovalComment, BudgetIncident, CostEvent, Workspace } from '@slaw/core'
import type { ColumnType } from 'kysely'
import type { Counter, Table } from './table.js'

/** Tables of migration 0002-governance (derived from their records; see table.ts). */

type ApprovalsTable = Table<Approval, { generated: 'status'; json: 'payload' }, { revision: Counter }>

interface ApprovalIssuesTable {
  approvalId: string
  issueId: string
}

type ApprovalCommentsTable = Table<ApprovalComment>

type WorkspacesTable = Table<Workspace, { generated: 'status'; json: 'metadata' }>

type CostEventsTable = Table<CostEvent>

interface CostRollupsTable {
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
  cacheWriteTokens: Counter
  unpricedTokens: Counter
}

/** Migration 0015: totals per squad, UTC day, provider, model and billing type. */
interface CostDayRollupsTable {
  squadId: string
  day: ColumnType<Date, string, string>
  provider: string
  model: string
  billingType: string
  costCents: Counter
  inputTokens: Counter
  cachedInputTokens: Counter
  outputTokens: Counter
  subscriptionTokens: Counter
  events: Counter
  cacheWriteTokens: Counter
  unpricedTokens: Counter
}

export type BudgetIncidentsTable = Table<BudgetIncident>

interface IssueStatusCountsTable {
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
  costDayRollups: CostDayRollupsTable
  budgetIncidents: BudgetIncidentsTable
  issueStatusCounts: IssueStatusCountsTable
}
