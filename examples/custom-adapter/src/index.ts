export { spoolAdapter, type SpoolAdapterOptions } from './spool-adapter.js'
export { serveSpool, type SpoolWorkerOptions } from './spool-worker.js'
export type { SpoolJob, SpoolResult } from './spool-files.js'
