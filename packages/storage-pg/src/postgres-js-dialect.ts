import type { Sql, ReservedSql } from 'postgres'
import {
  CompiledQuery, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler,
  type DatabaseConnection, type DatabaseIntrospector, type Dialect, type DialectAdapter, type Driver, type Kysely,
  type QueryCompiler, type QueryResult, type TransactionSettings,
} from 'kysely'

/**
 * A Kysely dialect for postgres.js that sends plain queries straight to the pool and reserves a
 * connection only for a transaction. kysely-postgres-js reserves one for every query, which cost
 * two thirds of the throughput of a point read in our measurements (bench/RESULTS.md). Queries run
 * as prepared statements, cached per connection by postgres.js.
 */
export class PostgresJsDialect implements Dialect {
  constructor(private readonly sql: Sql) {}
  createAdapter(): DialectAdapter {
    return new PostgresAdapter()
  }
  createDriver(): Driver {
    return new PostgresJsDriver(this.sql)
  }
  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new PostgresIntrospector(db)
  }
  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler()
  }
}

class PostgresJsDriver implements Driver {
  constructor(private readonly sql: Sql) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new PostgresJsConnection(this.sql)
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const conn = connection as PostgresJsConnection
    conn.reserved = await this.sql.reserve()
    const level = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : ''
    await conn.executeQuery(CompiledQuery.raw(`begin${level}`))
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'))
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'))
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const conn = connection as PostgresJsConnection
    conn.reserved?.release()
    conn.reserved = undefined
  }

  async destroy(): Promise<void> {
    // Give in-flight queries five seconds, then close regardless: shutdown must never hang.
    await this.sql.end({ timeout: 5 })
  }
}

class PostgresJsConnection implements DatabaseConnection {
  reserved: ReservedSql | undefined
  constructor(private readonly sql: Sql) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const target = this.reserved ?? this.sql
    const result = await target.unsafe(compiled.sql, compiled.parameters as never[], { prepare: compiled.parameters.length > 0 })
    const rows = [...result] as R[]
    const count = result.count
    const command = result.command
    return {
      rows,
      ...(command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE'
        ? { numAffectedRows: BigInt(count ?? 0) }
        : {}),
    }
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not used by slaw')
  }
}
