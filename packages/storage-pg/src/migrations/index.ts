import type { Migration, MigrationProvider } from 'kysely'
import * as foundation from './0001-foundation.js'

/**
 * Migrations in order. They are bundled (not read from disk) so the same list runs from src/,
 * dist/ESM and dist/CJS. Add a file and a line here; never edit a migration that has shipped.
 */
export const migrations: Record<string, Migration> = {
  '0001-foundation': foundation,
}

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
}
