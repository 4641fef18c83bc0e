/**
 * `@slaw/core/ingest`: the wire contract of ingest protocol v1, shared by the tower and the tower
 * client. TypeBox schemas (JSON Schema at runtime) with their static types, and the protocol's
 * constants. Depends on nothing but TypeBox.
 */
export * from './constants.js'
export { Timestamp, LocalId, Count, Nullable, Maybe, ProtocolVersion, DiscriminatedUnion } from './common.js'
export * from './errors.js'
export * from './enroll.js'
export * from './heartbeat.js'
export * from './sync.js'
export * from './manifest.js'
export * from './skills.js'
export * from './directives.js'
export * from './live.js'
