import { Kysely, Migrator } from 'kysely'
import postgres from 'postgres'
import { PostgresJsDialect, postgresTypes } from '@slaw/storage-pg'
import { PGliteDialect } from '@slaw/storage-pg/pglite'
import { migrationProvider } from '../migrations/index.js'
import { openPglite } from './pglite.js'
import type { TowerDatabase } from './schema.js'

export type TowerDb = Kysely<TowerDatabase>

export interface DatabaseOptions {
  /** postgres://… selects PostgreSQL through postgres.js. */
  databaseUrl?: string | undefined
  /** Embedded PGlite: a directory, or `memory://`. Used when databaseUrl is unset. */
  dataDir?: string | undefined
  /** Connections in the PostgreSQL pool. Default 10. */
  poolSize?: number | undefined
}

export interface OpenDatabase {
  db: TowerDb
  kind: 'postgres' | 'pglite'
  close(): Promise<void>
}

/** Opens the tower's database and brings its schema up to date. */
export async function openDatabase(options: DatabaseOptions): Promise<OpenDatabase> {
  let opened: OpenDatabase
  if (options.databaseUrl) {
    const client = postgres(options.databaseUrl, {
      max: options.poolSize ?? 10,
      types: postgresTypes,
      onnotice: () => undefined,
      connection: { application_name: 'slaw-tower' },
    })
    // Kysely's destroy() ends the client through the dialect.
    const db = new Kysely<TowerDatabase>({ dialect: new PostgresJsDialect(client) })
    opened = { db, kind: 'postgres', close: () => db.destroy() }
  } else {
    const pg = await openPglite(options.dataDir ?? './.slaw-tower', migrate)
    const db = new Kysely<TowerDatabase>({ dialect: new PGliteDialect(pg) })
    opened = { db, kind: 'pglite', close: () => db.destroy().then(() => pg.close()) }
  }
  try {
    await migrate(opened.db)
  } catch (err) {
    await opened.close().catch(() => undefined)
    throw err
  }
  return opened
}

/**
 * Runs pending migrations. Safe when several tower nodes start at once: Kysely's migrator takes a
 * PostgreSQL advisory lock inside one transaction, so one node migrates and the others then find
 * nothing left to do. The tower keeps its own migration tables beside any other user of the database.
 */
export async function migrate(db: Kysely<TowerDatabase>): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: migrationProvider,
    migrationTableName: 'tower_migration',
    migrationLockTableName: 'tower_migration_lock',
  })
  const { error } = await migrator.migrateToLatest()
  if (error) throw error instanceof Error ? error : new Error(`tower migration failed: ${String(error)}`)
}
