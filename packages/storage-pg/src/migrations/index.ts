import type { Migration, MigrationProvider } from 'kysely'
import * as foundation from './0001-foundation.js'
import * as governance from './0002-governance.js'
import * as tower from './0003-tower.js'
import * as skills from './0004-skills.js'
import * as runs from './0005-runs.js'
import * as secrets from './0006-secrets.js'
import * as routines from './0007-routines.js'
import * as commentSearch from './0009-comment-search.js'
import * as routineAuthorship from './0010-routine-authorship.js'
import * as cliAgents from './0012-cli-agents.js'
import * as events from './0013-events.js'
import * as consoleSessions from './0014-console-sessions.js'
import * as costDayRollups from './0015-cost-day-rollups.js'

/**
 * Migrations in order. They are bundled (not read from disk) so the same list runs from src/,
 * dist/ESM and dist/CJS. Add a file and a line here; never edit a migration that has shipped.
 * A migration is its exported `statements`, and its `up()` runs exactly those: a database never
 * migrated gets all of them as one script (empty-database.ts).
 *
 * There is no 0008: that number was held by work that never shipped, and a number is never reused.
 * Kysely applies migrations in name order, so a gap is harmless.
 */
export const migrations: Record<string, Migration> = {
  '0001-foundation': foundation,
  '0002-governance': governance,
  '0003-tower': tower,
  '0004-skills': skills,
  '0005-runs': runs,
  '0006-secrets': secrets,
  '0007-routines': routines,
  '0009-comment-search': commentSearch,
  '0010-routine-authorship': routineAuthorship,
  '0012-cli-agents': cliAgents,
  '0013-events': events,
  '0014-console-sessions': consoleSessions,
  '0015-cost-day-rollups': costDayRollups,
}

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
}

/**
 * Every migration's name and SQL, for cache keys (PGlite data-dir templates, test template
 * databases): a migration edited during development never loads a template built from its old text.
 */
export function migrationFingerprint(): string {
  return Object.entries(migrations)
    .map(([name, m]) => `${name}\0${String(m.up)}\0${((m as { statements?: string[] }).statements ?? []).join('\0')}`)
    .join('\0\0')
}
