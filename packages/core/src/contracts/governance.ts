import type { ActivityEntry, ActorType, Agent, Goal, GoalStatus, IssueSummary, Project } from '../records.js'
import type { Approval, ApprovalComment, ApprovalStatus, ApprovalType, BillingType, BudgetIncident, BudgetLevel, BudgetMetric, BudgetScopeType, CostEvent, Workspace } from '../records/governance.js'
import type { NewOutboxEntry } from '../records/activity.js'

/**
 * Records and repositories of governance and money: approvals, goals, projects and their execution
 * workspaces, cost events with their rollups, budgets and the dashboard's counters. Part of the
 * `Storage` contract (see storage.ts), kept in its own file so the two halves stay readable.
 */

// Records --------------------------------------------------------------------------------------

// The stored records are defined in records/governance.ts; the figures below are computed.
export * from '../records/governance.js'

/** Summed figures; `subscriptionTokens` are the tokens of subscription-billed events (token ceilings count them). */
export interface CostTotals {
  costCents: number
  inputTokens: number
  cachedInputTokens: number
  outputTokens: number
  subscriptionTokens: number
  events: number
  /** Input tokens written to a prompt cache. */
  cacheWriteTokens: number
  /** Every token of events nobody priced (`costStatus: unpriced`): spend that `costCents` does not show. */
  unpricedTokens: number
}

/** What a rollup row is about: the squad as a whole, one agent, one project or one provider. */
export type RollupScope = 'squad' | 'agent' | 'project' | 'provider'
/** A calendar month `YYYY-MM` (UTC), or `all` for lifetime totals. */
export type Period = string

export interface RollupKey {
  scope: RollupScope
  /** '' for the squad, else the agent id, project id or provider name. */
  key: string
  period: Period
}

/** Everything a checkout guard needs to judge budgets, read in one round trip. */
export interface BudgetCheckState {
  squadTokens: number | null
  squad: CostTotals
  agentTokens: number | null
  agent: CostTotals
  /** The project's lifetime budget and spend, when one was asked for. */
  projectBudgetCents: number | null
  project: CostTotals
}

// Repositories ---------------------------------------------------------------------------------

export interface NewApproval {
  id: string
  squadId: string
  type: ApprovalType
  requestedByAgentId: string | null
  payload: Record<string, unknown>
}
export interface ApprovalTransition {
  status: ApprovalStatus
  payload?: Record<string, unknown>
  decisionNote?: string | null
  decidedBy?: string | null
  decidedAt?: Date | null
  hiredAgentId?: string | null
  /** Adds one to `revision` (resubmit). */
  bumpRevision?: boolean
}
export interface ApprovalFilter {
  squadId: string
  statuses?: ApprovalStatus[]
  /** Only approvals that name this issue. */
  issueId?: string
  limit: number
  offset?: number
}
export interface NewApprovalComment {
  id: string
  approvalId: string
  squadId: string
  body: string
  authorType: ActorType
  authorId: string
}
export interface ApprovalRepository {
  insert(approval: NewApproval): Promise<Approval>
  get(id: string): Promise<Approval | undefined>
  /** Newest first. */
  list(filter: ApprovalFilter): Promise<Approval[]>
  /**
   * The state machine's final guard: applies `to` only while the approval's status is one of
   * `from`; undefined when it no longer is (a concurrent decision won).
   */
  transition(id: string, from: ApprovalStatus[], to: ApprovalTransition): Promise<Approval | undefined>
  linkIssues(approvalId: string, issueIds: string[]): Promise<void>
  linkedIssues(approvalId: string): Promise<IssueSummary[]>
  linkedIssueIds(approvalId: string): Promise<string[]>
  /** Pending approvals of the squad, all types and `hire_agent` alone. */
  countPending(squadId: string): Promise<{ all: number; hires: number }>
  insertComment(comment: NewApprovalComment): Promise<ApprovalComment>
  /** Oldest first. */
  comments(approvalId: string, limit: number): Promise<ApprovalComment[]>
}

export interface NewGoal {
  id: string
  squadId: string
  title: string
  description: string | null
  status: GoalStatus
  dueDate: string | null
}
export interface GoalPatch {
  title?: string
  description?: string | null
  status?: GoalStatus
  dueDate?: string | null
}
export interface GoalRepository {
  insert(goal: NewGoal): Promise<Goal>
  get(id: string): Promise<Goal | undefined>
  /** Oldest first. */
  list(squadId: string, page: { limit: number; offset?: number }): Promise<Goal[]>
  update(id: string, patch: GoalPatch): Promise<Goal | undefined>
  delete(id: string): Promise<boolean>
}

export interface NewProject {
  id: string
  squadId: string
  name: string
  description: string | null
  status: string
  goalId: string | null
  budgetCents: number | null
}
export interface ProjectPatch {
  name?: string
  description?: string | null
  status?: string
  goalId?: string | null
  budgetCents?: number | null
  pauseReason?: Project['pauseReason']
  pausedAt?: Date | null
}
export interface ProjectRepository {
  insert(project: NewProject): Promise<Project>
  /**
   * With `forShare`, the row stays share-locked until the transaction ends: a concurrent pause
   * (an UPDATE of the row) waits for it, and a read that waited for a pause sees it.
   */
  get(id: string, opts?: { forShare?: boolean }): Promise<Project | undefined>
  /** Oldest first. */
  list(squadId: string, page: { limit: number; offset?: number }): Promise<Project[]>
  update(id: string, patch: ProjectPatch): Promise<Project | undefined>
  /** Deletes the project (its workspaces go with it; issues keep existing without a project). */
  delete(id: string): Promise<boolean>
  /** Projects of the squad paused with the given reason. */
  countPaused(squadId: string, reason: NonNullable<Project['pauseReason']>): Promise<number>
}

export interface NewWorkspace {
  id: string
  projectId: string
  squadId: string
  name: string
  cwd: string | null
  repoUrl: string | null
  repoRef: string | null
  issueId: string | null
  metadata: Record<string, unknown>
}
export interface WorkspaceRepository {
  insert(workspace: NewWorkspace): Promise<Workspace>
  /** Newest first. */
  list(projectId: string, limit: number): Promise<Workspace[]>
}

export type NewCostEvent = Omit<CostEvent, 'createdAt'>
export interface WindowSpendRow extends CostTotals {
  provider: string
}
/** One event of a `recordMany` batch, with the rollup keys it adds to and the rows written alongside it. */
export interface CostEntry {
  event: NewCostEvent
  keys: RollupKey[]
  delta: CostTotals
  activity?: ActivityEntry[]
  outbox?: NewOutboxEntry[]
}
/** What recording one cost event did: the stored event, the rollup rows after it, the token ceilings. */
export interface RecordedCost {
  event: CostEvent
  totals: Array<RollupKey & CostTotals>
  tokenLimits: { squad: number | null; agent: number | null }
}
export interface CostRepository {
  /**
   * Inserts the event and adds its figures to each rollup row (creating missing rows), in one
   * statement, and returns the rows' totals after the addition with the squad's and the agent's
   * monthly token ceilings. Rollup rows are locked in the order given until the transaction ends:
   * callers pass the squad row first, so concurrent writers of one squad queue there before
   * touching any other row (no deadlocks), and each sees the totals the previous one left.
   * `alongside` rows (the event's activity entry, its outbox rows) are written by the same statement.
   */
  record(event: NewCostEvent, keys: RollupKey[], delta: CostTotals, alongside?: { activity?: ActivityEntry[]; outbox?: NewOutboxEntry[] }): Promise<RecordedCost>
  /**
   * `record` for several events in one statement (group commit). Each result's totals are the
   * rollups as they stood right after that event, in the order given, as if recorded one by one.
   * Rollup rows are locked squad by squad (ordered by squad id), each squad's row first.
   */
  recordMany(entries: CostEntry[]): Promise<RecordedCost[]>
  /**
   * Optional. `recordMany` as a statement that commits by itself, for events of squads, agents and
   * projects that have no budget: it writes only if, with their rows share-locked, every squad
   * exists unarchived, every agent exists in its event's squad, and no squad, agent or project has
   * a budget in cents or tokens (so no budget step can follow); otherwise it writes nothing and
   * answers null, and the caller takes the
   * transactional path. Called outside any transaction. Saves the transaction's round trips, and
   * no rollup row stays locked while the client is away.
   */
  recordUnbudgeted?(entries: CostEntry[]): Promise<RecordedCost[] | null>
  /** Rollup rows of a squad for one period and scope (all keys, or the keys given). */
  rollups(squadId: string, period: Period, scope: RollupScope, keys?: string[]): Promise<Array<{ key: string } & CostTotals>>
  /** Drops rollup rows of one scope key (a deleted project). */
  deleteRollups(squadId: string, scope: RollupScope, key: string): Promise<void>
  /** Lifetime totals of one issue. */
  issueTotals(issueId: string): Promise<CostTotals>
  /** Per provider: totals of events at or after each `since`, in the order given. */
  windowSpend(squadId: string, since: Date[], until: Date): Promise<Array<{ provider: string; windows: CostTotals[] }>>
  /** Per UTC day (`YYYY-MM-DD`): totals of a squad's events in [from, until), oldest first; days without events left out. */
  dailyTotals(squadId: string, from: Date, until: Date): Promise<Array<{ day: string } & CostTotals>>
  /** Per provider, model and billing type: totals of a squad's events in [from, until), in no particular order. */
  modelTotals(squadId: string, from: Date, until: Date): Promise<Array<{ provider: string; model: string; billingType: BillingType } & CostTotals>>
}

export interface NewBudgetIncident {
  id: string
  squadId: string
  scopeType: BudgetScopeType
  scopeId: string
  metric: BudgetMetric
  level: BudgetLevel
  period: Period
  limitAmount: number
  observedAmount: number
}
/** The budget overview's rows, read in one statement. */
export interface BudgetOverviewRows {
  squadTokens: number | null
  squad: CostTotals
  agents: Array<{ id: string; name: string; status: Agent['status']; pauseReason: string | null; budgetMonthlyCents: number | null; budgetMonthlyTokens: number | null; spent: CostTotals }>
  projects: Array<{ id: string; name: string; budgetCents: number | null; pausedAt: Date | null; pauseReason: Project['pauseReason']; spentCents: number }>
  incidents: BudgetIncident[]
}

export interface BudgetRepository {
  /**
   * Everything the overview shows: the squad's token ceiling and month spend, every agent (by name)
   * with its ceilings and month spend, every project (oldest first) with its lifetime spend, and
   * the open incidents of the given periods whose scope still exists (newest first).
   */
  overview(squadId: string, input: { period: Period; incidentPeriods: Period[] }): Promise<BudgetOverviewRows>
  /** Monthly token ceilings (null: none) of the squad and, when given, of the agent. */
  tokenLimits(squadId: string, agentId?: string): Promise<{ squad: number | null; agent: number | null }>
  setSquadTokens(squadId: string, tokens: number | null): Promise<void>
  setAgentTokens(agentId: string, tokens: number | null): Promise<void>
  /** The state a checkout guard judges: token ceilings and spend of squad and agent this month, project lifetime spend. */
  checkState(input: { squadId: string; agentId: string; projectId: string | null; period: Period }): Promise<BudgetCheckState>
  /** Opens an incident unless one is open for the same scope, metric, level and period; undefined when one was. */
  openIncident(incident: NewBudgetIncident): Promise<BudgetIncident | undefined>
  /** Resolves the open incidents of a scope and metric (all levels, or the levels given); returns how many. */
  resolveIncidents(scope: { scopeType: BudgetScopeType; scopeId: string; metric: BudgetMetric; period: Period; levels?: BudgetLevel[] }): Promise<number>
}

/** The dashboard's figures, read in one statement from counters and rollups (never a scan). */
export interface DashboardCounts {
  /** Issues per status. */
  issues: Record<string, number>
  /** Agents per status. */
  agents: Record<string, number>
  budgetPausedAgents: number
  budgetPausedProjects: number
  /** Squad spend in the period asked for. */
  spend: CostTotals
  pendingApprovals: number
  pendingHires: number
  /** Budgets (scope and metric) with an open incident in the periods asked for. */
  openIncidentBudgets: number
}

/** One squad's spend in a period, for `/metrics`. */
export interface SquadSpendFigure extends CostTotals {
  squadId: string
  name: string
}

/**
 * The instance-wide figures of `GET /metrics` (docs/operations.md), read at scrape time: runs in
 * flight by status and adapter type, the squads with the highest spend this period and the squads
 * with the most pending approvals (each at most `maxSquads`, with how many squads there were).
 */
export interface MetricFigures {
  runsInFlight: Array<{ status: 'queued' | 'running'; adapterType: string; count: number }>
  spend: SquadSpendFigure[]
  /** Squads with a rollup for the period (more than `spend.length` when the list was cut). */
  spendSquads: number
  pendingApprovals: Array<{ squadId: string; name: string; count: number }>
  /** Squads with a pending approval (more than `pendingApprovals.length` when the list was cut). */
  approvalSquads: number
}

export interface DashboardRepository {
  /** Every live figure of the dashboard but run activity, in one round trip. */
  counts(squadId: string, input: { period: Period; incidentPeriods: Period[] }): Promise<DashboardCounts>
  /**
   * Optional: the instance-wide figures of `/metrics`, in one round trip, from the same rollups
   * and counters as `counts` (no scan of runs or cost events). Without it `/metrics` has none.
   */
  metricFigures?(input: { period: Period; maxSquads: number }): Promise<MetricFigures>
  /**
   * Heartbeat runs per UTC day and status since `since`; null when this storage keeps no runs yet
   * (the dashboard then reports zero rows for every day).
   */
  runsPerDay(squadId: string, since: Date): Promise<Array<{ date: string; status: string; count: number }> | null>
}
