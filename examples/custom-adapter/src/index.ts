export { spoolAdapter, spoolConfigSchema, type SpoolAdapterOptions, type SpoolAgentConfig } from './spool-adapter.js'
export { serveSpool, type SpoolWorkerOptions } from './spool-worker.js'
export type { SpoolJob, SpoolResult } from './spool-files.js'
