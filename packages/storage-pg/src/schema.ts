import type { ColumnType, Generated, RawBuilder, Selectable } from 'kysely'
import type {
  ActivityEntry,
  Agent,
  AgentWakeup,
  ApiKeyRecord,
  ConsoleSessionRecord,
  Comment,
  Goal,
  HeartbeatRun,
  Interaction,
  Issue,
  IssueDocument,
  Job,
  OutboxEntry,
  Project,
  Squad,
} from '@slaw/core'
import type { GovernanceTables } from './schema-governance.js'
import type { SkillTables } from './schema-skills.js'
import type { SecretTables } from './schema-secrets.js'
import type { TowerTables } from './schema-tower.js'
import type { RoutineTables } from './schema-routines.js'
import type { Table, Timestamp } from './table.js'

/**
 * Tables as Kysely sees them, each derived from the core record it stores (see table.ts): a table
 * names only what differs from its record. A new record field is a new column with no edit here.
 */

type SquadsTable = Table<Squad, { generated: 'status' | 'budgetHardStop' }, { issueCounter: Generated<number>; budgetMonthlyTokens: number | null }>

type AgentsTable = Table<
  Agent,
  { generated: 'status' | 'adapterConfig'; json: 'desiredSkills' | 'permissions' | 'runtimeState' | 'adapterConfig' },
  // The webhook secret is storage's alone: no Agent record, response or payload carries it.
  { budgetMonthlyTokens: number | null; webhookSecret: string | null }
>

type ApiKeysTable = Table<ApiKeyRecord>

type ConsoleSessionsTable = Table<ConsoleSessionRecord>

type GoalsTable = Table<Goal, { generated: 'status' }>

type ProjectsTable = Table<Project, { generated: 'status' }>

type IssuesTable = Table<Issue, {}, { priorityRank: number; search: ColumnType<string, unknown, unknown> }>

interface IssueBlockersTable {
  issueId: string
  blockedByIssueId: string
}

type CommentsTable = Table<Comment>

type IssueDocumentsTable = Table<IssueDocument>

type InteractionsTable = Table<Interaction, { generated: 'status'; json: 'payload' | 'response' }>

/** `txid` orders the live event feed (migration 0013); storage only. */
type ActivityTable = Table<ActivityEntry, { json: 'details' }, { txid: Generated<string | null> }>

/** `seq` is the published order (`pubSeq`), read as a string. */
type OutboxTable = Table<OutboxEntry, { json: 'payload'; omit: 'seq' }, { id: Generated<number>; txid: Generated<number>; pubSeq: number | null }>

type JobsTable = Table<Job, { generated: 'status' | 'attempts' | 'maxAttempts'; json: 'payload' | 'result' }, { runAt: Timestamp }>

type AgentWakeupsTable = Table<AgentWakeup, { generated: 'status' }>

/** Token and cost figures SQL adds to (the record's `usage`). */
type UsageColumn = ColumnType<string | number, number | undefined, number | RawBuilder<unknown>>
type HeartbeatRunsTable = Table<
  HeartbeatRun,
  { generated: 'status' | 'coalescedCount' | 'continuationDepth' | 'retryAttempt'; omit: 'usage' },
  {
    inputTokens: UsageColumn
    outputTokens: UsageColumn
    costCents: UsageColumn
    cachedInputTokens: UsageColumn
    cacheWriteTokens: UsageColumn
    unpricedTokens: UsageColumn
    costStatus: ColumnType<string | null, string | null | undefined, string | null | RawBuilder<unknown>>
    provider: string | null
    biller: string | null
    billingType: string | null
  }
>

interface HeartbeatRunDaysTable {
  squadId: string
  day: string
  status: string
  runs: number
}

export interface Database extends GovernanceTables, SkillTables, TowerTables, RoutineTables, SecretTables {
  heartbeatRuns: HeartbeatRunsTable
  heartbeatRunDays: HeartbeatRunDaysTable
  squads: SquadsTable
  agents: AgentsTable
  apiKeys: ApiKeysTable
  consoleSessions: ConsoleSessionsTable
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
