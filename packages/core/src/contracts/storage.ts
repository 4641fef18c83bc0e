import type {
  ActivityEntry,
  Agent,
  AgentWakeup,
  ApiKeyRecord,
  Comment,
  Interaction,
  InteractionStatus,
  Issue,
  IssueDocument,
  IssuePriority,
  IssueRef,
  IssueStatus,
  IssueSummary,
  Job,
  NewOutboxEntry,
  OutboxEntry,
  Squad,
  HeartbeatRun,
  HeartbeatRunLiveness,
  HeartbeatRunStatus,
} from '../records.js'
import type { EnvBinding } from '../records/routines.js'
import type { ApprovalRepository, BudgetRepository, CostRepository, DashboardRepository, GoalRepository, ProjectRepository, WorkspaceRepository } from './governance.js'
export type * from './governance.js'
import type { SkillRepository } from './skills.js'
export type * from './skills.js'
import type { TowerStateRepository } from './tower-state.js'
export type * from './tower-state.js'
import type { RoutineRepository, RoutineRunEnv } from './routines.js'
export type * from './routines.js'
import type { SecretRepository } from './secrets.js'
export type * from './secrets.js'

/**
 * Storage: everything slaw persists, behind narrow repositories.
 *
 * Services hold the domain rules; a storage implementation holds only the SQL (or whatever it
 * speaks) and the atomic primitives services rely on:
 * - `transaction(fn)`: every repository call made through the session `fn` receives commits or
 *   rolls back together. One request is one transaction.
 * - `issues.checkout(...)`: a conditional update that is the final guard against double owners.
 * - `UniqueViolation`: unique constraints surface as this error with a stable constraint name.
 * - `jobs.claim(...)`: hands a job to exactly one worker across every node sharing the store.
 *
 * Prove an implementation with `storageContract` from `@slaw/core/testing`.
 */
export interface Storage extends StorageSession {
  /** A short name for logs, e.g. `postgres` or `pglite`. */
  readonly name: string
  /**
   * The directory an embedded storage keeps its data in, when it has one on disk: createInstance
   * keeps a generated master key there when none is given. Absent for servers and memory stores.
   */
  readonly dataDir?: string
  /**
   * True when the data lives in this process only (PGlite `memory://`): nothing encrypted can
   * outlive the process, so createInstance may use a random master key. Anything else (a server,
   * a directory, a storage that does not say) needs a master key that outlives the process.
   */
  readonly inMemory?: boolean
  /** Brings the schema up to date. Safe to call from several nodes at once. */
  migrate(): Promise<void>
  /** The feed behind live events (`GET /api/squads/{id}/events`, docs/events.md). */
  readonly events: EventFeed
  /** Live output of runs, in chunks: `run.output` events and the output route's tail. */
  readonly runOutput: RunOutputStore
  /**
   * Optional: calls `listener` after each transaction this storage committed on this node (it may
   * have written activity), with the notes that transaction attached (`StorageSession.note`).
   * Without it, live events on this node wait for the next poll and `/metrics` counts no wakes.
   */
  onCommit?(listener: (notes: readonly CommitNote[]) => void): () => void
  /**
   * Optional: wakes the other nodes when events committed here (PostgreSQL LISTEN/NOTIFY). A
   * single-node storage (PGlite) has none; createInstance's `eventBroker` (Redis) replaces it.
   */
  readonly eventBroker?: EventBroker
  /**
   * Runs `fn` in one transaction; a throw rolls everything back. A call made while a transaction is
   * open in the same async context joins it, and so does every repository call made through the
   * storage itself in that context (so a service never deadlocks a single-connection backend).
   */
  transaction<T>(fn: (tx: StorageSession) => Promise<T>): Promise<T>
  /** A cheap round trip, for health checks. */
  ping(): Promise<void>
  /** Optional: connection pool use, for `/metrics` (`inUse` counts connections held by queries and transactions). */
  poolStats?(): { max: number; inUse: number }
  /** Closes what the storage opened itself; a client passed in by the caller stays open. */
  close(): Promise<void>
}

/**
 * What a transaction tells this node's `onCommit` listeners once it has committed (never when it
 * rolls back): a wake it queued, for `slaw_wakes_queued_total`.
 */
export interface CommitNote {
  kind: 'wake_queued'
  /** The wake's reason (a manual wake's free text included: the reader bounds it). */
  reason: string
}

export interface StorageSession {
  readonly squads: SquadRepository
  readonly agents: AgentRepository
  readonly keys: KeyRepository
  /** Console sign-in sessions (docs/console.md): stored by token hash, bound to an Operator key. */
  readonly consoleSessions: ConsoleSessionRepository
  readonly issues: IssueRepository
  readonly comments: CommentRepository
  readonly documents: DocumentRepository
  readonly interactions: InteractionRepository
  readonly activity: ActivityRepository
  readonly outbox: OutboxRepository
  readonly jobs: JobRepository
  readonly wakeups: WakeupRepository
  readonly projects: ProjectRepository
  readonly goals: GoalRepository
  readonly approvals: ApprovalRepository
  readonly workspaces: WorkspaceRepository
  readonly costs: CostRepository
  readonly budgets: BudgetRepository
  readonly dashboard: DashboardRepository
  readonly skills: SkillRepository
  readonly towerState: TowerStateRepository
  readonly routines: RoutineRepository
  readonly secrets: SecretRepository
  readonly heartbeatRuns: HeartbeatRunRepository
  /**
   * The env bindings of the routine whose run created an issue, for the wake environment. Provided
   * by the storage that stores routines; absent means no routine env joins a wake.
   */
  readonly routineEnv?: RoutineEnvRepository
  /**
   * Optional: attaches `note` to the open transaction; `onCommit` listeners receive it after the
   * commit, and nobody does if it rolls back. Outside a transaction it is delivered at once.
   */
  note?(note: CommitNote): void
}

/** Thrown by any write that breaks a unique constraint; `constraint` is one of `UniqueConstraint`. */
export class UniqueViolation extends Error {
  constructor(readonly constraint: UniqueConstraint | string) {
    super(`unique constraint violated: ${constraint}`)
    this.name = 'UniqueViolation'
  }
}
/**
 * Thrown by storage when the database cannot be reached or dropped the connection mid-request
 * (failover, restart, a pooler closing the socket). The request answers 503 `database_unavailable`;
 * nothing of its transaction was committed, and the next request gets a fresh connection.
 */
export class StorageUnavailableError extends Error {
  constructor(message = 'the database connection was lost', options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StorageUnavailableError'
  }
}
export type UniqueConstraint = 'squads_slug' | 'squads_issue_prefix' | 'agents_squad_name' | 'issues_squad_number' | 'issue_documents_issue_key' | 'issues_identifier' | 'secrets_squad_key'

export interface Page {
  limit: number
  offset?: number
}

export interface NewSquad {
  id: string
  name: string
  slug: string
  issuePrefix: string
}
export interface SquadPatch {
  name?: string
  status?: Squad['status']
  budgetMonthlyCents?: number | null
  budgetHardStop?: boolean
}
export type SquadRowLock = 'share' | 'update'
export interface SquadRepository {
  insert(squad: NewSquad): Promise<Squad>
  /**
   * `lock` (inside a transaction) locks the row until the transaction ends: `share` against a
   * concurrent archive (writers that must not land in an archived squad), `update` for a writer
   * that updates the row later in the same transaction (issue numbering), so it never upgrades a
   * share lock and deadlocks.
   */
  get(id: string, opts?: { lock?: SquadRowLock }): Promise<Squad | undefined>
  /**
   * The squad of an issue, found by the issue's id: a read that needs no answer from another one,
   * so a write (checkout) sends it together with the issue's own read.
   */
  getOfIssue(issueId: string): Promise<Squad | undefined>
  list(filter?: { ids?: string[] }): Promise<Squad[]>
  /** Prefixes already taken, among the candidates given. */
  takenPrefixes(candidates: string[]): Promise<string[]>
  update(id: string, patch: SquadPatch): Promise<Squad | undefined>
  /** Deletes the squad and everything it owns. */
  delete(id: string): Promise<boolean>
  /** Atomically reserves the squad's next issue number (1, 2, …). */
  nextIssueNumber(id: string): Promise<number>
}

export interface NewAgent {
  id: string
  squadId: string
  name: string
  role: string
  title: string | null
  adapterType: string
  reportsToAgentId: string | null
  prompt: string | null
  desiredSkills: string[]
  adapterConfig?: Record<string, unknown>
}
export interface AgentPatch {
  name?: string
  title?: string | null
  prompt?: string | null
  status?: Agent['status']
  pauseReason?: string | null
  permissions?: Record<string, unknown>
  instructionsPath?: string | null
  runtimeState?: Record<string, unknown>
  reportsToAgentId?: string | null
  budgetMonthlyCents?: number | null
  adapterConfig?: Record<string, unknown>
}
export interface AgentRepository {
  insert(agent: NewAgent): Promise<Agent>
  get(id: string): Promise<Agent | undefined>
  list(squadId: string): Promise<Agent[]>
  /** With `whenStatus`, changes the agent only while its status is one of those (else `undefined`). */
  update(id: string, patch: AgentPatch, opts?: { whenStatus?: Agent['status'][] }): Promise<Agent | undefined>
  /** Sets every non-terminated agent of the squad to `status` (squad archive pauses them). */
  setStatusForSquad(squadId: string, status: Agent['status'], pauseReason: string | null): Promise<number>
  delete(id: string): Promise<boolean>
  /** The managers above the agent, nearest first. */
  chainOfCommand(id: string): Promise<Array<Pick<Agent, 'id' | 'name' | 'role'>>>
  /** The agent's webhook signing secret as stored (a MasterKey envelope), or null. */
  webhookSecret(id: string): Promise<string | null>
  setWebhookSecret(id: string, envelope: string | null): Promise<void>
  /**
   * Sets one saved CLI session in the agent's runtime state (`runtimeState.sessions[key]`), or with
   * null removes it (only while its `sessionId` is `onlyIfSessionId`, when given), in one atomic
   * step. Optional: without it the run engine rewrites the whole runtime state.
   */
  setSession?(id: string, key: string, session: Record<string, unknown> | null, onlyIfSessionId?: string): Promise<void>
  /** Agents of the squad whose name matches one of `names` case-insensitively (comment mentions). */
  findByNames(squadId: string, names: string[]): Promise<Agent[]>
}

export interface NewApiKey {
  id: string
  kind: ApiKeyRecord['kind']
  name: string
  agentId: string | null
  squadId: string | null
  tokenHash: string
  expiresAt: Date | null
}
export interface KeyRepository {
  insert(key: NewApiKey): Promise<ApiKeyRecord>
  findByHash(tokenHash: string): Promise<ApiKeyRecord | undefined>
  listForAgent(agentId: string): Promise<ApiKeyRecord[]>
  listOperatorKeys(): Promise<ApiKeyRecord[]>
  countOperatorKeys(): Promise<number>
  revoke(id: string): Promise<boolean>
  /** Replaces a key's stored hash (a chosen key moving to its keyed form); false when the id is unknown. */
  rehash(id: string, tokenHash: string): Promise<boolean>
}

/** A console sign-in session: the SHA-256 of its cookie token, never the token. */
export interface ConsoleSessionRecord {
  id: string
  tokenHash: string
  /** The Operator key that signed in: revoking it ends the session. */
  keyId: string
  createdAt: Date
  expiresAt: Date
}
export interface NewConsoleSession {
  id: string
  tokenHash: string
  keyId: string
  expiresAt: Date
}
export interface ConsoleSessionRepository {
  insert(session: NewConsoleSession): Promise<ConsoleSessionRecord>
  /**
   * The session stored under `tokenHash` if it has not expired at `now` and its Operator key is
   * neither revoked nor expired; otherwise undefined.
   */
  findActive(tokenHash: string, now: Date): Promise<ConsoleSessionRecord | undefined>
  /** Deletes one session (sign-out); false when there was none. */
  deleteByHash(tokenHash: string): Promise<boolean>
  /** Deletes every session of the key (its revocation); how many. */
  deleteForKey(keyId: string): Promise<number>
  /** Deletes every session; how many. */
  deleteAll(): Promise<number>
  /** Deletes sessions expired at `now`; how many. */
  deleteExpired(now: Date): Promise<number>
}

export interface NewIssue {
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
  parentId: string | null
  goalId: string | null
  projectId: string | null
  billingCode: string | null
}
export interface IssuePatch {
  title?: string
  description?: string | null
  status?: IssueStatus
  priority?: IssuePriority
  assigneeAgentId?: string | null
  assigneeUserId?: string | null
  checkoutAgentId?: string | null
  parentId?: string | null
  goalId?: string | null
  projectId?: string | null
  billingCode?: string | null
}
export interface IssueFilter extends Page {
  squadId: string
  statuses?: IssueStatus[]
  assigneeAgentId?: string
  projectId?: string
  /** Full-text query over title, identifier, description and comments. */
  q?: string
}
export interface CheckoutRequest {
  id: string
  agentId: string
  /** The update applies only while the status is one of these. */
  allowedStatuses: IssueStatus[]
}
export interface IssueRepository {
  insert(issue: NewIssue): Promise<Issue>
  /**
   * Takes each issue's squad's next number and inserts the issue with it (`<prefix>-<number>`), in
   * the order given, in one step; the squads' rows stay held until commit. An issue whose squad is
   * archived or gone comes back `undefined`, and takes no number.
   */
  insertNumbered(issues: Array<Omit<NewIssue, 'number' | 'identifier'>>): Promise<Array<Issue | undefined>>
  get(id: string): Promise<Issue | undefined>
  getByIdentifier(identifier: string): Promise<Issue | undefined>
  list(filter: IssueFilter): Promise<IssueSummary[]>
  /** Issues assigned to or checked out by the agent, most urgent first. */
  inbox(agentId: string, statuses: IssueStatus[], limit: number): Promise<IssueSummary[]>
  update(id: string, patch: IssuePatch): Promise<Issue | undefined>
  /**
   * Sets status `in_progress`, assignee and checkout owner to `agentId`, only while nobody else owns
   * the issue and its status is allowed. Returns undefined when the condition no longer holds.
   */
  checkout(req: CheckoutRequest): Promise<Issue | undefined>
  /** Clears the checkout owner (status unchanged); with `agentId`, only if that agent holds it. */
  release(id: string, agentId: string | null): Promise<Issue | undefined>
  delete(id: string): Promise<boolean>
  /** Clears assignee and checkout owner wherever the agent holds them. */
  unassignAgent(agentId: string): Promise<number>
  setBlockers(issueId: string, blockedByIssueIds: string[]): Promise<void>
  blockedBy(issueId: string): Promise<IssueRef[]>
  blocks(issueId: string): Promise<IssueRef[]>
  /** The issue with what blocks it and what it blocks, in one round trip (the hot read path). */
  getWithLinks(id: string): Promise<{ issue: Issue; blockedBy: IssueRef[]; blocks: IssueRef[] } | undefined>
  /** Parent, grandparent, … nearest first. */
  ancestors(issueId: string): Promise<IssueRef[]>
  /** Of the ids given, the ones that are issues of the squad. */
  existingIds(squadId: string, ids: string[]): Promise<string[]>
  /** Recomputes the search document from title, identifier, description and every comment. */
  refreshSearch(issueId: string): Promise<void>
  /** How many children of the issue are neither done nor cancelled. */
  openChildren(parentId: string): Promise<number>
}

export interface NewComment {
  id: string
  issueId: string
  squadId: string
  body: string
  authorType: Comment['authorType']
  authorId: string
}
export interface CommentRepository {
  /** Inserts comments (each indexed for search on its own row), answered in the order given. */
  insert(comments: NewComment[]): Promise<Comment[]>
  get(issueId: string, commentId: string): Promise<Comment | undefined>
  list(issueId: string, opts: { after?: Comment; order: 'asc' | 'desc'; limit: number }): Promise<Comment[]>
  cursor(issueId: string): Promise<{ totalComments: number; latestCommentId: string | null; latestCommentAt: Date | null }>
}

export interface DocumentWrite {
  issueId: string
  key: string
  title: string
  format: 'markdown'
  body: string
  /** The revision the writer saw; null when creating. */
  baseRevisionId: string | null
  newRevisionId: string
  id: string
}
export interface DocumentRepository {
  list(issueId: string): Promise<IssueDocument[]>
  get(issueId: string, key: string): Promise<IssueDocument | undefined>
  /** Writes only when the stored revision equals `baseRevisionId` (or nothing is stored and it is null). */
  put(doc: DocumentWrite): Promise<IssueDocument | undefined>
  delete(issueId: string, key: string): Promise<boolean>
}

export interface NewInteraction {
  id: string
  issueId: string
  squadId: string
  kind: Interaction['kind']
  payload: Record<string, unknown>
  continuationPolicy: Interaction['continuationPolicy']
  idempotencyKey: string | null
  createdByType: Interaction['createdByType']
  createdById: string
}
export interface InteractionRepository {
  /** Idempotent on (issueId, idempotencyKey): a repeat returns the stored interaction with `created: false`. */
  insert(interaction: NewInteraction): Promise<{ interaction: Interaction; created: boolean }>
  get(issueId: string, id: string): Promise<Interaction | undefined>
  list(issueId: string): Promise<Interaction[]>
  /** Moves a pending interaction to `status`; undefined when it is no longer pending. */
  resolve(id: string, status: Exclude<InteractionStatus, 'pending'>, response: Record<string, unknown> | null): Promise<Interaction | undefined>
}

export type NewActivity = Omit<ActivityEntry, 'createdAt'>
export interface ActivityFilter {
  squadId: string
  agentId?: string
  entityType?: string
  entityId?: string
  limit: number
}
export interface ActivityRepository {
  insert(entry: NewActivity): Promise<ActivityEntry>
  /** Writes entries and the outbox rows of the same change(s) together (one round trip where the backend can). */
  record(entries: ActivityEntry[], outbox: NewOutboxEntry[]): Promise<void>
  list(filter: ActivityFilter): Promise<ActivityEntry[]>
}

export interface OutboxRepository {
  append(entries: NewOutboxEntry[]): Promise<void>
  /** Entries with `seq` greater than `afterSeq` (a decimal string; '0' for all), in order. */
  readAfter(afterSeq: string, limit: number): Promise<OutboxEntry[]>
  /** How many entries have `seq` greater than `afterSeq`. */
  countAfter(afterSeq: string): Promise<number>
}

export interface NewJob {
  id: string
  kind: string
  squadId: string | null
  payload: Record<string, unknown>
  runAt?: Date
  /**
   * While a job of the same kind with this key is queued or running, enqueue adds nothing and
   * returns that job.
   */
  dedupeKey?: string | null
  /** Attempts before a failing job stays failed (default 5). */
  maxAttempts?: number
}
export interface JobRepository {
  enqueue(job: NewJob): Promise<Job>
  get(id: string): Promise<Job | undefined>
  /**
   * Claims up to `limit` due jobs of the given kinds for `workerId` for `leaseMs`. A job is handed to
   * one worker only, across every node; a lease that runs out makes the job claimable again.
   * `at` is the clock to decide "due" and "expired" by (default: the database's).
   */
  claim(kinds: string[], workerId: string, leaseMs: number, limit: number, at?: Date): Promise<Job[]>
  /** Extends a lease the worker still holds; false when it lost the job. */
  renew(id: string, workerId: string, leaseMs: number, at?: Date): Promise<boolean>
  complete(id: string, workerId: string, result: Record<string, unknown> | null): Promise<boolean>
  /** Completes several jobs the worker holds in one statement; returns the ids it completed. */
  completeMany(workerId: string, jobs: Array<{ id: string; result: Record<string, unknown> | null }>): Promise<string[]>
  /** With `retryAt`, the job is queued again for then (the attempt counts); without, it is failed. */
  fail(id: string, workerId: string, error: string, retryAt?: Date | null): Promise<boolean>
  /** Puts a claimed job back for `runAt` without counting the attempt (e.g. over a concurrency cap). */
  defer(id: string, workerId: string, runAt: Date): Promise<boolean>
  /** Makes queued jobs of `kind` due at `at` when they wait for later (a slot freed up). */
  promote(kind: string, at: Date): Promise<number>
  /** Deletes up to `limit` completed or failed jobs finished before `before`. */
  purgeFinished(before: Date, limit: number): Promise<number>
}

export interface NewWakeup {
  id: string
  squadId: string
  agentId: string
  issueId: string | null
  reason: string
}
export interface WakeupRepository {
  enqueue(wakeup: NewWakeup): Promise<AgentWakeup>
  listQueued(agentId: string): Promise<AgentWakeup[]>
}

// Goal and project repositories live in governance.ts with the rest of governance and money.

export interface NewHeartbeatRun {
  id: string
  squadId: string
  agentId: string
  issueId: string | null
  reason: string
  approvalId: string | null
  commentId: string | null
  routineRunId: string | null
  continuationDepth: number
  /** n for the n-th retry after a transient upstream failure; default 0. */
  retryAttempt?: number
}
export interface HeartbeatRunFilter {
  squadId: string
  agentId?: string
  statuses?: HeartbeatRunStatus[]
  /** Cursor: runs older than this run id. */
  beforeId?: string
  limit: number
}
export interface RunSlotCaps {
  perAgent: number
  perSquad: number | null
  perInstance: number | null
}
export interface RunStart {
  nodeId: string
  startedAt: Date
  deadlineAt: Date
  /**
   * The saved CLI session the run would resume. Kept on the run only when no other running run of
   * the agent holds it (decided under the slot lock); read the run back to see which it got.
   */
  sessionId?: string | null
}
/** One usage report added to a run's totals (see HeartbeatRun.usage). */
export interface RunUsageDelta {
  inputTokens: number
  outputTokens: number
  /** Priced cents (0 for unpriced usage). */
  costCents: number
  cachedInputTokens?: number
  cacheWriteTokens?: number
  /** Tokens of this report when it is unpriced. */
  unpricedTokens?: number
  costStatus?: 'reported' | 'estimated' | 'unpriced' | null
  provider?: string | null
  biller?: string | null
  billingType?: string | null
}
export interface RunFinish {
  status: Exclude<HeartbeatRunStatus, 'queued' | 'running'>
  finishedAt: Date
  liveness?: HeartbeatRunLiveness | null
  exitCode?: number | null
  httpStatus?: number | null
  error?: string | null
  outputTail?: string | null
  summary?: string | null
  errorCode?: string | null
  retryNotBefore?: Date | null
  /** The CLI session the run ended in (resumed or new); null: none. */
  sessionId?: string | null
}
export interface HeartbeatRunRepository {
  /**
   * Queues a run unless one is already queued for the agent and issue; then that run absorbs the
   * wake (coalescedCount + 1, the newest comment/approval id) and `created` is false.
   */
  queue(run: NewHeartbeatRun): Promise<{ run: HeartbeatRun; created: boolean }>
  get(id: string): Promise<HeartbeatRun | undefined>
  /** Newest first. */
  list(filter: HeartbeatRunFilter): Promise<HeartbeatRun[]>
  /** Runs woken for the issue or that wrote to it (activity carrying their id), newest first. */
  listForIssue(issueId: string, limit: number): Promise<HeartbeatRun[]>
  /** Issues the run changed: every activity entry on an issue carrying the run id. */
  touchedIssues(runId: string): Promise<IssueSummary[]>
  /**
   * queued → running, only while the caps hold across every node (serialised in the database).
   * Call inside a transaction.
   */
  start(id: string, start: RunStart, caps: RunSlotCaps): Promise<'started' | 'over_cap' | 'not_queued'>
  /** Ends the run when its status is one of `from`; undefined when it was not. */
  finish(id: string, from: HeartbeatRunStatus[], end: RunFinish): Promise<HeartbeatRun | undefined>
  /** Liveness and summary reported by the agent while it runs. */
  report(id: string, patch: { liveness?: HeartbeatRunLiveness; summary?: string }): Promise<HeartbeatRun | undefined>
  addUsage(id: string, usage: RunUsageDelta): Promise<void>
  /** Running runs whose deadline passed. */
  overdue(at: Date, limit: number): Promise<HeartbeatRun[]>
  /** The agent's running runs and its latest finished one. */
  agentState(agentId: string): Promise<{ running: HeartbeatRun[]; last: HeartbeatRun | null; queued: number }>
  /** Retention: drops output of runs finished before `outputBefore`, deletes runs finished before `runsBefore`. */
  purge(runsBefore: Date, outputBefore: Date, limit: number): Promise<{ runs: number; outputs: number }>
}

export interface RoutineEnvRepository {
  /** The routine's env bindings for a routine run, or null when the run or its env is absent. */
  envForRun(routineRunId: string): Promise<Record<string, EnvBinding> | null>
  /** The same with who wrote the env and who the run was for (the run engine's trust rules). */
  runEnv(routineRunId: string): Promise<RoutineRunEnv | null>
}

/**
 * One event of the live feed: an activity entry (or a chunk of a run's output), at its place in
 * the feed. `cursor` orders the feed: `<txid>-<source>-<key>`, compared as (integer, integer,
 * string) by `compareEventCursors`; '0' is before every event.
 */
export interface FeedEvent {
  cursor: string
  squadId: string
  /** The activity action (`issue.created`, `run.started` …), or `run.output` for output. */
  action: string
  entityType: string
  entityId: string
  actorType: string
  actorId: string
  agentId: string | null
  runId: string | null
  details: Record<string, unknown> | null
  createdAt: Date
}

/**
 * The feed is the activity log in commit order. An event is readable once its transaction and
 * every older one have ended (the same visibility horizon as the outbox), so a reader that moves
 * its cursor past what it read never skips an event that commits late: a row may appear later
 * only with a cursor above every cursor already read.
 */
export interface EventFeed {
  /**
   * Final events after `after` ('0' for all), oldest first; only those of `squadId` when given.
   * `pending` is true when newer events have committed that are not final yet (an older
   * transaction is still open): read again shortly.
   */
  readAfter(after: string, limit: number, squadId?: string): Promise<{ events: FeedEvent[]; pending: boolean }>
  /** The cursor of the newest final event ('0' when none): where a reader starting now begins. */
  head(): Promise<string>
  /** When the event at `cursor` happened; undefined when no such event is stored (pruned, or never). */
  locate(cursor: string): Promise<Date | undefined>
}

/** A chunk of a run's live output. */
export interface RunOutputChunk {
  /** Increasing within the run (a decimal string); `after` of the output route. */
  id: string
  runId: string
  stream: 'stdout' | 'stderr'
  text: string
  /** Characters of this stream that came before this chunk. */
  offset: number
  createdAt: Date
}
export interface NewRunOutputChunk {
  runId: string
  squadId: string
  agentId: string | null
  issueId: string | null
  stream: 'stdout' | 'stderr'
  text: string
  offset: number
}
/**
 * Chunks of run output. Each appended chunk is also an event of the feed (`run.output`, its
 * details `{ stream, text, offset, issueId }`), ordered with the activity of the same transactions.
 */
export interface RunOutputStore {
  /** Appends chunks (in order), then drops the run's chunks that end more than `keepChars` before its newest. */
  append(chunks: NewRunOutputChunk[], keepChars: number): Promise<void>
  /** The run's kept chunks after chunk `afterId` ('0' for all), oldest first. */
  read(runId: string, afterId: string, limit: number): Promise<RunOutputChunk[]>
}

/** Wakes event readers on every node. It carries no events: readers read them from storage. */
export interface EventBroker {
  /** Tells the other nodes that events may have committed here (may be batched; never throws). */
  publish(): void
  /** Calls `wake` when another node published. Resolves once listening; the function stops it. */
  subscribe(wake: () => void): Promise<() => Promise<void>>
  /** Closes what the broker opened itself; the instance calls it when it closes. */
  close?(): Promise<void>
}

/** Orders two feed cursors (`<txid>-<source>-<key>`, '0' first): negative, zero or positive. */
export function compareEventCursors(a: string, b: string): number {
  if (a === b) return 0
  const [ta = '0', sa = '0', ...ka] = a.split('-')
  const [tb = '0', sb = '0', ...kb] = b.split('-')
  const t = BigInt(ta) - BigInt(tb)
  if (t !== 0n) return t < 0n ? -1 : 1
  if (sa !== sb) return Number(sa) - Number(sb)
  const x = ka.join('-')
  const y = kb.join('-')
  return x < y ? -1 : x > y ? 1 : 0
}

/** True when `cursor` has the shape of a feed cursor (Last-Event-ID comes from clients). */
export function isEventCursor(cursor: string): boolean {
  return cursor === '0' || /^\d{1,20}-\d{1,3}-[0-9a-z-]{1,64}$/.test(cursor)
}
