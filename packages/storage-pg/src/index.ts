// PostgreSQL storage. The embedded PGlite backend is `@slaw/storage-pg/pglite` (see src/pglite.ts).
export { pgStorage, postgresTypes, type PgStorageOptions } from './pg-storage.js'
export { KyselyStorage, createSession, type KyselyStorageOptions, type Db } from './kysely-storage.js'
export { migrations, migrationProvider, migrationFingerprint } from './migrations/index.js'
export type { Database } from './schema.js'
export { PostgresJsDialect } from './postgres-js-dialect.js'
