import type { ColumnType, Generated, Insertable, RawBuilder, Selectable } from 'kysely'
import type { GovernanceTables } from './schema-governance.js'
import type { SkillTables } from './schema-skills.js'
import type { SecretTables } from './schema-secrets.js'
import type { TowerTables } from './schema-tower.js'
import type { RoutineTables } from './schema-routines.js'

/** Table shapes as Kysely sees them (camelCase: the CamelCasePlugin maps to snake_case columns). */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>
type CreatedAt = ColumnType<Date, Date | string | undefined, never>
/** jsonb columns are written through `json()` (see sql-helpers.ts), never as raw JS values. */
type Json<T> = ColumnType<T, RawBuilder<unknown>, RawBuilder<unknown>>

export interface SquadsTable {
  id: string
  name: string
  slug: string
  status: Generated<string>
  issuePrefix: string
  issueCounter: Generated<number>
  budgetMonthlyCents: number | null
  budgetHardStop: Generated<boolean>
  budgetMonthlyTokens: number | null
  createdAt: CreatedAt
  updatedAt: Timestamp
}

export interface AgentsTable {
  id: string
  squadId: string
  name: string
  role: string
  title: string | null
  status: Generated<string>
  adapterType: string
  reportsToAgentId: string | null
  prompt: string | null
  desiredSkills: Json<string[]>
  permissions: Json<Record<string, unknown>>
  instructionsPath: string | null
  runtimeState: Json<Record<string, unknown>>
  budgetMonthlyCents: number | null
  budgetMonthlyTokens: number | null
  pauseReason: string | null
  createdAt: CreatedAt
  updatedAt: Timestamp
}

export interface ApiKeysTable {
  id: string
  kind: 'operator' | 'agent'
  name: string
  agentId: string | null
  squadId: string | null
  tokenHash: string
  createdAt: CreatedAt
  expiresAt: Date | null
  revokedAt: Date | null
  lastUsedAt: Date | null
}

export interface GoalsTable {
  id: string
  squadId: string
  title: string
  description: string | null
  status: Generated<string>
  dueDate: string | null
  createdAt: CreatedAt
  updatedAt: Timestamp
}

export interface ProjectsTable {
  id: string
  squadId: string
  name: string
  description: string | null
  status: Generated<string>
  goalId: string | null
  budgetCents: number | null
  pausedAt: Date | null
  pauseReason: string | null
  createdAt: CreatedAt
  updatedAt: Timestamp
}

export interface IssuesTable {
  id: string
  squadId: string
  number: number
  identifier: string
  title: string
  description: string | null
  status: string
  priority: string
  priorityRank: number
  assigneeAgentId: string | null
  assigneeUserId: string | null
  checkoutAgentId: string | null
  checkedOutAt: Date | null
  parentId: string | null
  goalId: string | null
  projectId: string | null
  billingCode: string | null
  search: ColumnType<string, unknown, unknown>
  createdAt: CreatedAt
  updatedAt: Timestamp
}

export interface IssueBlockersTable {
  issueId: string
  blockedByIssueId: string
}

export interface CommentsTable {
  id: string
  issueId: string
  squadId: string
  body: string
  authorType: string
  authorId: string
  createdAt: CreatedAt
}

export interface IssueDocumentsTable {
  id: string
  issueId: string
  key: string
  title: string
  format: string
  body: string
  revisionId: string
  createdAt: CreatedAt
  updatedAt: Timestamp
}

export interface InteractionsTable {
  id: string
  issueId: string
  squadId: string
  kind: string
  payload: Json<Record<string, unknown>>
  continuationPolicy: string | null
  idempotencyKey: string | null
  status: Generated<string>
  response: Json<Record<string, unknown> | null> | null
  createdByType: string
  createdById: string
  resolvedAt: Date | null
  createdAt: CreatedAt
}

export interface ActivityTable {
  id: string
  squadId: string
  actorType: string
  actorId: string
  action: string
  entityType: string
  entityId: string
  agentId: string | null
  runId: string | null
  details: Json<Record<string, unknown> | null> | null
  createdAt: CreatedAt
}

export interface OutboxTable {
  id: Generated<number>
  txid: Generated<number>
  pubSeq: number | null
  kind: string
  entityType: string
  entityId: string
  squadId: string | null
  payload: Json<Record<string, unknown>>
  createdAt: CreatedAt
}

export interface JobsTable {
  id: string
  kind: string
  squadId: string | null
  payload: Json<Record<string, unknown>>
  status: Generated<string>
  attempts: Generated<number>
  runAt: Timestamp
  lockedBy: string | null
  lockedUntil: Date | null
  result: Json<Record<string, unknown> | null> | null
  error: string | null
  createdAt: CreatedAt
  finishedAt: Date | null
}

export interface AgentWakeupsTable {
  id: string
  squadId: string
  agentId: string
  issueId: string | null
  reason: string
  status: Generated<string>
  createdAt: CreatedAt
}

export interface Database extends GovernanceTables, SkillTables, TowerTables, RoutineTables, SecretTables {
  squads: SquadsTable
  agents: AgentsTable
  apiKeys: ApiKeysTable
  goals: GoalsTable
  projects: ProjectsTable
  issues: IssuesTable
  issueBlockers: IssueBlockersTable
  comments: CommentsTable
  issueDocuments: IssueDocumentsTable
  interactions: InteractionsTable
  activity: ActivityTable
  outbox: OutboxTable
  jobs: JobsTable
  agentWakeups: AgentWakeupsTable
}

export type Row<T extends keyof Database> = Selectable<Database[T]>
export type NewRow<T extends keyof Database> = Insertable<Database[T]>
