// PostgreSQL storage. The embedded PGlite backend is `@slaw/storage-pg/pglite` (see src/pglite.ts).
export { pgStorage, postgresTypes, type PgStorageOptions } from './pg-storage.js'
export { KyselyStorage, createSession, type KyselyStorageOptions, type Db } from './kysely-storage.js'
export { migrations, migrationProvider, migrationFingerprint } from './migrations/index.js'
export type { Database } from './schema.js'
// For a host's own tables beside slaw's (the tower's): jsonb that postgres.js and PGlite store alike.
export { json } from './sql-helpers.js'
export { PostgresJsDialect } from './postgres-js-dialect.js'
