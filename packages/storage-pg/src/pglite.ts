// `@slaw/storage-pg/pglite`: the embedded backend. A separate entry point so a PostgreSQL host
// neither installs PGlite (an optional peer dependency) nor type-checks its declarations.
export { openPglite, pgliteStorage, type PgliteStorageOptions } from './pglite-storage.js'
export { PGliteDialect } from './pglite-dialect.js'
export { loadPgliteTemplate, pgliteTemplateFile, pgliteTemplateDir, copyPgliteTemplate, isEmptyDir, type PgliteTemplate } from './pglite-template.js'
