import { AsyncLocalStorage } from 'node:async_hooks'
import { CamelCasePlugin, Kysely, Migrator, sql, type Dialect, type Transaction } from 'kysely'
import type { CommitNote, EventBroker, Storage, StorageSession } from '@slaw/core'
import { migrationProvider, migrations } from './migrations/index.js'
import { migrateEmptyDatabase } from './migrations/empty-database.js'
import { pipelined } from './pipelined-transaction.js'
import type { Database } from './schema.js'
import { PgActivityRepository } from './repositories/activity.js'
import { PgApprovalRepository } from './repositories/approvals.js'
import { PgBudgetRepository } from './repositories/budgets.js'
import { PgCostRepository } from './repositories/costs.js'
import { PgDashboardRepository } from './repositories/dashboard.js'
import { PgWorkspaceRepository } from './repositories/workspaces.js'
import { PgAgentRepository } from './repositories/agents.js'
import { PgGoalRepository, PgProjectRepository } from './repositories/goals-projects.js'
import { PgCommentRepository, PgDocumentRepository, PgInteractionRepository } from './repositories/issue-records.js'
import { PgIssueRepository } from './repositories/issues.js'
import { PgJobRepository, PgWakeupRepository } from './repositories/jobs.js'
import { PgKeyRepository } from './repositories/keys.js'
import { PgConsoleSessionRepository } from './repositories/console-sessions.js'
import { PgOutboxRepository } from './repositories/outbox.js'
import { PgSquadRepository } from './repositories/squads.js'
import { PgSkillRepository } from './repositories/skills.js'
import { PgTowerStateRepository } from './repositories/tower-state.js'
import { PgRoutineRepository } from './repositories/routines.js'
import { PgSecretRepository } from './repositories/secrets.js'
import { PgHeartbeatRunRepository } from './repositories/heartbeat-runs.js'
import { PgEventFeed } from './repositories/events.js'
import { PgRunOutputStore } from './repositories/run-output.js'

export type Db = Kysely<Database>

/** Builds every repository over a function that yields the database handle to use right now. */
export function createSession(db: () => Db): StorageSession {
  const routines = new PgRoutineRepository(db)
  return {
    squads: new PgSquadRepository(db),
    agents: new PgAgentRepository(db),
    keys: new PgKeyRepository(db),
    consoleSessions: new PgConsoleSessionRepository(db),
    issues: new PgIssueRepository(db),
    comments: new PgCommentRepository(db),
    documents: new PgDocumentRepository(db),
    interactions: new PgInteractionRepository(db),
    activity: new PgActivityRepository(db),
    outbox: new PgOutboxRepository(db),
    jobs: new PgJobRepository(db),
    wakeups: new PgWakeupRepository(db),
    goals: new PgGoalRepository(db),
    projects: new PgProjectRepository(db),
    approvals: new PgApprovalRepository(db),
    workspaces: new PgWorkspaceRepository(db),
    costs: new PgCostRepository(db),
    budgets: new PgBudgetRepository(db),
    dashboard: new PgDashboardRepository(db),
    skills: new PgSkillRepository(db),
    towerState: new PgTowerStateRepository(db),
    routines,
    // The run engine reads a routine run's env through this narrow view of the routine repository.
    routineEnv: routines,
    secrets: new PgSecretRepository(db),
    heartbeatRuns: new PgHeartbeatRunRepository(db),
  }
}

export interface KyselyStorageOptions {
  name: string
  dialect: Dialect
  /** Runs after the Kysely instance is destroyed (closing a client the storage created). */
  onClose?: () => Promise<void>
  /** The on-disk data directory of an embedded database (see `Storage.dataDir`). */
  dataDir?: string
  /** The data lives in this process only (see `Storage.inMemory`). */
  inMemory?: boolean
  /** Pool use, when the dialect knows it. */
  poolStats?: () => { max: number; inUse: number }
  /** Wakes other nodes' event readers (PostgreSQL LISTEN/NOTIFY); none for a single-node store. */
  eventBroker?: EventBroker
  /** A parameterless query may hold several statements (postgres.js's simple protocol; not PGlite's `query`). */
  scripts?: boolean
}

/** The open transaction of an async context, and the notes it attached for `onCommit` listeners. */
interface TransactionScope {
  trx: Transaction<Database>
  open: boolean
  notes: CommitNote[] | undefined
}
const noNotes: readonly CommitNote[] = []

/**
 * Storage over Kysely, shared by PostgreSQL and PGlite: same queries, same migrations. The open
 * transaction lives in AsyncLocalStorage, so nested `transaction()` calls and plain repository
 * calls made inside one join it.
 */
export class KyselyStorage implements Storage {
  readonly name: string
  readonly dataDir: string | undefined
  readonly inMemory: boolean
  readonly db: Db
  /**
   * The open transaction of the current async context. Work started inside a transaction (a timer,
   * an event handler, a promise nobody awaits) inherits the context and may run after the commit:
   * a scope that ended (`open: false`) is never joined, so such work runs on the pool by itself
   * instead of failing on, or writing into, a transaction that is over.
   */
  private readonly current = new AsyncLocalStorage<TransactionScope>()
  private readonly session: StorageSession
  private readonly onClose: (() => Promise<void>) | undefined
  private readonly dialect: Dialect
  private readonly scripts: boolean
  private closed = false
  private readonly commitListeners = new Set<(notes: readonly CommitNote[]) => void>()
  poolStats?: () => { max: number; inUse: number }
  readonly events: PgEventFeed
  readonly runOutput: PgRunOutputStore
  readonly eventBroker?: EventBroker

  constructor(options: KyselyStorageOptions) {
    this.name = options.name
    this.dataDir = options.dataDir
    this.inMemory = options.inMemory === true
    this.dialect = options.dialect
    this.scripts = options.scripts === true
    // Columns are mapped to camelCase; jsonb values (activity details, payloads, permissions) are
    // user data and keep their keys exactly as written (`api_key` must not come back as `apiKey`).
    this.db = new Kysely<Database>({ dialect: options.dialect, plugins: [new CamelCasePlugin({ maintainNestedObjectKeys: true })] })
    this.onClose = options.onClose
    if (options.poolStats) this.poolStats = options.poolStats
    this.session = { ...createSession(() => this.openTransaction() ?? this.db), note: (note) => this.note(note) }
    this.events = new PgEventFeed(() => this.openTransaction() ?? this.db)
    this.runOutput = new PgRunOutputStore(() => this.openTransaction() ?? this.db)
    if (options.eventBroker) this.eventBroker = options.eventBroker
  }

  onCommit(listener: (notes: readonly CommitNote[]) => void): () => void {
    this.commitListeners.add(listener)
    return () => this.commitListeners.delete(listener)
  }

  get squads() {
    return this.session.squads
  }
  get agents() {
    return this.session.agents
  }
  get keys() {
    return this.session.keys
  }
  get consoleSessions() {
    return this.session.consoleSessions
  }
  get issues() {
    return this.session.issues
  }
  get comments() {
    return this.session.comments
  }
  get documents() {
    return this.session.documents
  }
  get interactions() {
    return this.session.interactions
  }
  get activity() {
    return this.session.activity
  }
  get outbox() {
    return this.session.outbox
  }
  get jobs() {
    return this.session.jobs
  }
  get wakeups() {
    return this.session.wakeups
  }
  get goals() {
    return this.session.goals
  }
  get projects() {
    return this.session.projects
  }
  get approvals() {
    return this.session.approvals
  }
  get workspaces() {
    return this.session.workspaces
  }
  get costs() {
    return this.session.costs
  }
  get budgets() {
    return this.session.budgets
  }
  get skills() {
    return this.session.skills
  }
  get towerState() {
    return this.session.towerState
  }
  get dashboard() {
    return this.session.dashboard
  }
  get routines() {
    return this.session.routines
  }
  get routineEnv() {
    return this.session.routineEnv
  }
  get secrets() {
    return this.session.secrets
  }
  get heartbeatRuns() {
    return this.session.heartbeatRuns
  }

  async migrate(): Promise<void> {
    const recorded = await this.recordedMigrations()
    if (recorded && recorded.length === Object.keys(migrations).length && recorded.every((name) => Object.hasOwn(migrations, name))) return
    // A database slaw never migrated: every migration in one transaction (migrations/empty-database.ts).
    if (!recorded && (await migrateEmptyDatabase(this.db as unknown as Kysely<unknown>, { scripts: this.scripts }))) return
    const migrator = new Migrator({ db: this.db, provider: migrationProvider, migrationTableName: 'slaw_migration', migrationLockTableName: 'slaw_migration_lock' })
    const { error, results } = await migrator.migrateToLatest()
    const failed = results?.find((r) => r.status === 'Error')
    if (error) throw new Error(`slaw migrations failed${failed ? ` at ${failed.migrationName}` : ''}: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
  }

  /**
   * The migrations recorded in `slaw_migration`, or undefined when there is no such table. Exactly
   * this build's list means a start costs two small queries: Kysely's Migrator would first scan the
   * catalog for its two tables (every column of every table), which on a fresh PGlite was about
   * 300 ms of a 1.8 s start. Anything else (a migration to run, one this build does not know) goes
   * to the Migrator, which applies or refuses exactly as before.
   */
  private async recordedMigrations(): Promise<string[] | undefined> {
    const {
      rows: [table],
    } = await sql<{ exists: boolean }>`select to_regclass('slaw_migration') is not null as exists`.execute(this.db)
    if (!table?.exists) return undefined
    const { rows } = await sql<{ name: string }>`select name from slaw_migration`.execute(this.db)
    return rows.map((row) => row.name)
  }

  private openTransaction(): Transaction<Database> | undefined {
    const scope = this.current.getStore()
    return scope?.open ? scope.trx : undefined
  }

  async transaction<T>(fn: (tx: StorageSession) => Promise<T>): Promise<T> {
    if (this.openTransaction()) return fn(this.session)
    const result = await this.db.transaction().execute(async (trx) => {
      const scope: TransactionScope = { trx: await pipelined(trx, this.dialect), open: true, notes: undefined }
      try {
        return { value: await this.current.run(scope, () => fn(this.session)), notes: scope.notes }
      } finally {
        scope.open = false
      }
    })
    // Committed: live event readers look for what it wrote, /metrics counts its notes.
    this.committed(result.notes ?? noNotes)
    return result.value
  }

  /** `StorageSession.note`: kept by the open transaction of this async context, else heard at once. */
  note(note: CommitNote): void {
    const scope = this.current.getStore()
    if (scope?.open) (scope.notes ??= []).push(note)
    else this.committed([note])
  }

  /** A listener never fails the caller: a reader's problem, not this transaction's. */
  private committed(notes: readonly CommitNote[]): void {
    for (const listener of this.commitListeners) {
      try {
        listener(notes)
      } catch {}
    }
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.db.destroy()
    await this.onClose?.()
  }
}
