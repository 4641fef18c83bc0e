import type { Migration, MigrationProvider } from 'kysely'
import * as initial from './0001-initial.js'
import * as consoleSessions from './0002-console-sessions.js'

/**
 * The tower's migrations in order, bundled (not read from disk) so the same list runs from src/ and
 * dist/. Add a file and a line here; never edit a migration that has shipped.
 */
export const migrations: Record<string, Migration> = {
  '0001-initial': initial,
  '0002-console-sessions': consoleSessions,
}

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
}
