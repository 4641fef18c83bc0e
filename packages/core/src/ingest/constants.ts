/**
 * Numbers and names of ingest protocol v1 that both ends of the wire share: the tower enforces them,
 * the tower client stays inside them.
 */

/** The ingest wire protocol version this code speaks. */
export const PROTOCOL_VERSION = 1

/** The oldest version a tower still accepts: the current one and the one immediately prior. */
export const MIN_PROTOCOL_VERSION = PROTOCOL_VERSION - 1

/** The path prefix of every ingest call. */
export const INGEST_BASE_PATH = '/api/ingest/v1'

/** Most upserts one sync batch may carry. */
export const MAX_UPSERTS = 2000

/** Most facts one sync batch may carry. */
export const MAX_FACTS = 5000

/** Largest ingest request body once inflated (gzip bombs stop here). */
export const MAX_BODY_BYTES = 32 * 1024 * 1024

/** Largest single frame on the live channel. */
export const MAX_LIVE_FRAME_BYTES = 1024 * 1024

/** Default seconds between two polls of a pending enrollment. */
export const DEFAULT_POLL_INTERVAL_SEC = 10

/** Default seconds between two heartbeats. */
export const DEFAULT_HEARTBEAT_INTERVAL_SEC = 60

/** An instance counts as offline after this many missed heartbeats. */
export const MISSED_HEARTBEATS_OFFLINE = 3

/** Bounds of the `set_sync_interval` directive, in seconds. */
export const MIN_SYNC_INTERVAL_SEC = 10
export const MAX_SYNC_INTERVAL_SEC = 3600

/** The only activity actions an `activity_event` fact may carry; any other is rejected (400). */
export const ACTIVITY_ACTIONS = [
  'agent.created',
  'agent.deleted',
  'squad.created',
  'cost.reported',
  'budget_soft_threshold_crossed',
  'budget_hard_threshold_crossed',
  'squad.budget_updated',
  'agent.budget_updated',
] as const
export type ActivityAction = (typeof ACTIVITY_ACTIONS)[number]

export const UPSERT_TYPES = ['squad', 'agent', 'squad_skill', 'project', 'issue'] as const
export type UpsertType = (typeof UPSERT_TYPES)[number]

export const FACT_TYPES = ['cost_event', 'run_event', 'activity_event'] as const
export type FactType = (typeof FACT_TYPES)[number]

/** Types a manifest may ask to resync. */
export const RESYNC_TYPES = ['squad', 'agent', 'project', 'issue', 'cost_event'] as const
export type ResyncType = (typeof RESYNC_TYPES)[number]

export const ENROLLMENT_STATES = ['pending', 'active', 'rejected', 'revoked'] as const
export type EnrollmentState = (typeof ENROLLMENT_STATES)[number]

export const DIRECTIVE_KINDS = ['set_sync_interval', 'request_reconciliation', 'request_live_stream', 'stop_live_stream', 'set_limits', 'skills_updated'] as const
export type DirectiveKind = (typeof DIRECTIVE_KINDS)[number]
