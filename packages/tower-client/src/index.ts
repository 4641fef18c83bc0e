// Public surface of @slaw/tower-client.
export { towerClient, REPORTER_LEASE } from './client.js'
export type { TowerClientOptions } from './options.js'
export { IngestError } from './http.js'
export { Backoff, parseRetryAfter } from './backoff.js'
export { fillBatch, toWire, padCursor, type Batch, type WireOptions } from './wire.js'
