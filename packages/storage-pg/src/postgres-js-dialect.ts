import type { Sql, TransactionSql } from 'postgres'
import { StorageUnavailableError } from '@slaw/core'
import {
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely'

/**
 * A Kysely dialect for postgres.js that sends plain queries straight to the pool and holds a
 * connection only for a transaction. kysely-postgres-js reserves one for every query, which cost
 * two thirds of the throughput of a point read in our measurements (bench/RESULTS.md). Queries run
 * as prepared statements, cached per connection by postgres.js.
 *
 * A connection that dies under a transaction (failover, restart, `pg_terminate_backend`, a pooler
 * closing the socket) must never take the process down or hang the pool, whatever postgres.js does
 * with it. postgres.js 3.4.x crashes the process when anything is written to such a connection (a
 * write to a null socket in a timer, postgres.js #1208), hangs the pool when it is released
 * (#1199), and loses a `reserve()` request that was waiting for the dropped connection. So:
 * transactions run inside `sql.begin()` (its `begin` is an ordinary pooled query, and postgres.js
 * takes the connection back itself); once the connection reported a connection error or closed,
 * nothing more is written to it (no rollback: the server rolled back already); and every such
 * failure surfaces as `StorageUnavailableError`, which the API answers 503 `database_unavailable`.
 */
export class PostgresJsDialect implements Dialect {
  /** Open transactions and pool queries in flight, for pool-use metrics. */
  private readonly usage = { transactions: 0, queries: 0 }
  constructor(private readonly sql: Sql) {}
  /** Connections held right now: one per open transaction and per pool query in flight. */
  busy(): number {
    return this.usage.transactions + this.usage.queries
  }
  createAdapter(): DialectAdapter {
    return new PostgresAdapter()
  }
  createDriver(): Driver {
    return new PostgresJsDriver(this.sql, this.usage)
  }
  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new PostgresIntrospector(db)
  }
  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler()
  }
}

interface Usage {
  transactions: number
  queries: number
}

class PostgresJsDriver implements Driver {
  constructor(
    private readonly sql: Sql,
    private readonly usage: Usage,
  ) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new PostgresJsConnection(this.sql, this.usage)
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const level = settings.isolationLevel ? `isolation level ${settings.isolationLevel}` : ''
    await (connection as PostgresJsConnection).begin(level)
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PostgresJsConnection).finish(true)
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PostgresJsConnection).finish(false)
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    // Nothing to release: postgres.js returns the connection of a `begin()` to its pool itself.
    ;(connection as PostgresJsConnection).forget()
  }

  async destroy(): Promise<void> {
    // Give in-flight queries five seconds, then close regardless: shutdown must never hang.
    await this.sql.end({ timeout: 5 })
  }
}

/** The part of postgres.js's internal connection object the guard reads (see `usable()`). */
interface DriverConnection {
  /** A function while a transaction holds the connection; postgres.js nulls it when the socket closes. */
  reserved: unknown
}

/** Rejects the transaction body on rollback; never seen outside this file. */
const rollbackRequested = Symbol('rollback requested')

class PostgresJsConnection implements DatabaseConnection {
  /** The transaction's handle while one is open. */
  private tx: TransactionSql | undefined
  /** Settles the body given to `sql.begin()`: resolve commits, reject rolls back. */
  private settle: { resolve: () => void; reject: (reason: unknown) => void } | undefined
  /** `sql.begin()`'s promise: settles after commit or rollback, or rejects when the connection closes. */
  private done: Promise<unknown> | undefined
  /** Set once the transaction's connection reported a connection error or closed. */
  private broken = false
  /** postgres.js's connection under the transaction, learnt from the first query sent on it. */
  private driver: DriverConnection | undefined
  constructor(
    private readonly sql: Sql,
    private readonly usage: Usage,
  ) {}

  begin(level: string): Promise<void> {
    this.broken = false
    this.driver = undefined
    return new Promise<void>((started, failed) => {
      let inside = false
      this.usage.transactions++
      const done = this.sql.begin(level, (tx) => {
        inside = true
        this.tx = tx
        started()
        return new Promise<void>((resolve, reject) => (this.settle = { resolve, reject }))
      })
      this.done = done
      done.then(
        () => this.usage.transactions--,
        () => this.usage.transactions--,
      )
      done.catch((err: unknown) => {
        if (!inside) failed(asUnavailable(err))
        else if (isConnectionError(err)) this.broken = true
      })
    })
  }

  /** Commits (`true`) or rolls back; on a lost connection, writes nothing and reports it. */
  async finish(commit: boolean): Promise<void> {
    const settle = this.settle
    const done = this.done
    const usable = this.usable()
    // Queries after the transaction (kysely's migrator runs one on the same connection) go to the pool.
    this.forget()
    if (!settle || !done) return
    if (!usable) {
      // The server rolled the transaction back when the connection died. The body given to
      // `sql.begin()` is left unsettled on purpose: settling it would make postgres.js write a
      // commit or rollback to the dead connection. Nothing references it any more, so it is
      // collected.
      if (commit) throw new StorageUnavailableError('the database connection was lost before commit')
      return
    }
    if (commit) settle.resolve()
    else settle.reject(rollbackRequested)
    try {
      await done
    } catch (err) {
      if (err === rollbackRequested) return
      if (commit) throw asUnavailable(err)
      // A failed rollback leaves nothing to undo that the server did not undo itself.
    }
  }

  forget(): void {
    this.tx = undefined
    this.settle = undefined
    this.done = undefined
    this.driver = undefined
  }

  /**
   * Whether the transaction's connection may still be written to: no connection error was reported
   * on it, and (when postgres.js told us which connection it is) its socket has not closed since.
   */
  usable(): boolean {
    if (this.driver && !this.driver.reserved) this.broken = true
    return !this.broken
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const tx = this.tx
    if (tx && !this.usable()) throw new StorageUnavailableError('the database connection of this transaction was lost')
    const options: Record<string, unknown> = { prepare: compiled.parameters.length > 0 }
    if (tx && !this.driver) {
      // Learn which postgres.js connection serves the transaction, so a socket that closes between
      // two queries is noticed before anything is written to it.
      options.onexecute = (c: DriverConnection) => {
        this.driver = c
        return true
      }
    }
    let result
    try {
      const query = (tx ?? this.sql).unsafe(compiled.sql, compiled.parameters as never[], options as { prepare: boolean })
      // A query queued behind another one on a connection that then closes is never sent and
      // never settles; the transaction's end (which rejects when the connection closes) ends the wait.
      if (tx && this.done) result = await Promise.race([query, this.done.then(() => query)])
      else {
        this.usage.queries++
        try {
          result = await query
        } finally {
          this.usage.queries--
        }
      }
    } catch (err) {
      if (!isConnectionError(err)) throw err
      if (tx) this.broken = true
      throw asUnavailable(err)
    }
    const rows = [...result] as R[]
    const count = result.count
    const command = result.command
    return {
      rows,
      ...(command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE' ? { numAffectedRows: BigInt(count ?? 0) } : {}),
    }
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not used by slaw')
  }
}

/** postgres.js's own codes for a lost or unreachable connection, and Node's socket errors. */
const connectionErrorCodes = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ENDED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
])

/**
 * A failure of the connection rather than of the statement: the driver's and the socket's codes,
 * SQLSTATE class 08 (connection exception) and 57P01-57P03 (the server shutting down, crashed or
 * not yet accepting connections).
 */
function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code !== 'string') return false
  return connectionErrorCodes.has(code) || code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03'
}

function asUnavailable(err: unknown): unknown {
  if (!isConnectionError(err)) return err
  const code = (err as { code: string }).code
  return new StorageUnavailableError(`the database is unavailable (${code})`, { cause: err })
}
