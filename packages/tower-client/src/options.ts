import type { TowerMode } from '@slaw/core'
import { MAX_FACTS, MAX_UPSERTS, PROTOCOL_VERSION } from '@slaw/core/ingest'
import { isValidInstanceId } from './identity.js'

export interface TowerClientOptions {
  /**
   * The tower's base URL (`SVC_TOWER_URL`), e.g. `https://tower.example.com`. Without it the client
   * stays disconnected until an Operator connects it (`POST /api/tower/connect`).
   */
  url?: string | undefined
  /** `enforce` (default): gate the API until enrolled. `advisory`: never gate; report best effort. */
  mode?: TowerMode
  /** This instance's id on the tower; default `SVC_INSTANCE_ID`, else generated once and stored. At most 64 of `[a-zA-Z0-9_-]`. */
  instanceId?: string | undefined
  /** Overrides the machine id (8–128 characters); default: a salted SHA-256 of the host's identifier. */
  machineId?: string | undefined
  /** Seconds between heartbeats. Default 60. */
  heartbeatSec?: number
  /** Seconds between outbox checks, until the tower sets another interval. Default 30. */
  syncSec?: number
  /** The tower's pre-shared enrollment secret (`SVC_TOWER_ENROLLMENT_SECRET`), when it asks for one. */
  enrollmentSecret?: string | undefined
  /** False: issue titles are replaced by their identifier (e.g. `ENG-12`) in everything sent. Default true. */
  reportIssueTitles?: boolean
  /** Open the live channel when the tower asks for it. Default false. */
  liveStream?: boolean

  // Tuning. The defaults suit production; tests shorten them.
  /** First retry delay after 429, 5xx or a network error; doubles per failure. Default 1000. */
  retryBaseMs?: number
  /** Longest retry delay. Default 300000 (5 min). */
  retryMaxMs?: number
  /** One ingest call's time limit. Default 20000. */
  requestTimeoutMs?: number
  /** The reporting lease's length: another node takes over this long after the reporter dies. Default 30000. */
  leaseMs?: number
  /** How often a node that is not reporting (or is disconnected) re-reads the shared state. Default 5000. */
  refreshMs?: number
  /** How long month-to-date usage read for the fleet limit is reused. Default 2000. */
  limitUsageTtlMs?: number
  /** Seconds between two reconciliation manifests. Default 86400 (nightly). */
  manifestIntervalSec?: number
  /** Live channel: how often new facts are read, and pings sent. Defaults 1000 and 15000. */
  livePollMs?: number
  livePingMs?: number
  /** Most upserts and facts per sync batch; the protocol's 2000 and 5000 are the defaults and the ceilings. */
  batchUpserts?: number
  batchFacts?: number
  /** On close, how long an in-flight call may finish before it is cut. Default 2000. */
  closeGraceMs?: number
  /** The protocolVersion sent. Default: the version this code speaks; other values are for compatibility tests. */
  protocolVersion?: number
}

export type ResolvedOptions = Required<Omit<TowerClientOptions, 'url' | 'instanceId' | 'machineId' | 'enrollmentSecret'>> &
  Pick<TowerClientOptions, 'url' | 'instanceId' | 'machineId' | 'enrollmentSecret'>

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`towerClient: ${name} must be a positive number (got ${String(value)})`)
  }
  return value
}

export function resolveOptions(o: TowerClientOptions): ResolvedOptions {
  if (o.url !== undefined) {
    let u: URL
    try {
      u = new URL(o.url)
    } catch {
      throw new TypeError(`towerClient: url must be an absolute http(s) URL (got "${o.url}")`)
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new TypeError(`towerClient: url must use http or https (got "${o.url}")`)
  }
  const mode = o.mode ?? 'enforce'
  if (mode !== 'enforce' && mode !== 'advisory') throw new TypeError(`towerClient: mode must be enforce or advisory (got "${String(mode)}")`)
  // SVC_INSTANCE_ID applies to an embedded client too, unless the option says otherwise.
  const instanceId = o.instanceId ?? (process.env.SVC_INSTANCE_ID || undefined)
  if (instanceId !== undefined && !isValidInstanceId(instanceId)) {
    throw new TypeError('towerClient: instanceId must be 1 to 64 characters of [a-zA-Z0-9_-]')
  }
  if (o.machineId !== undefined && (o.machineId.length < 8 || o.machineId.length > 128)) {
    throw new TypeError('towerClient: machineId must be 8 to 128 characters')
  }
  return {
    // One spelling of the URL, so a stored connect or enrollment matches it whatever slashes were typed.
    url: o.url?.replace(/\/+$/, ''),
    mode,
    instanceId,
    machineId: o.machineId,
    enrollmentSecret: o.enrollmentSecret,
    heartbeatSec: positive('heartbeatSec', o.heartbeatSec, 60),
    syncSec: positive('syncSec', o.syncSec, 30),
    reportIssueTitles: o.reportIssueTitles ?? true,
    liveStream: o.liveStream ?? false,
    retryBaseMs: positive('retryBaseMs', o.retryBaseMs, 1000),
    retryMaxMs: positive('retryMaxMs', o.retryMaxMs, 300_000),
    requestTimeoutMs: positive('requestTimeoutMs', o.requestTimeoutMs, 20_000),
    leaseMs: positive('leaseMs', o.leaseMs, 30_000),
    refreshMs: positive('refreshMs', o.refreshMs, 5000),
    limitUsageTtlMs: positive('limitUsageTtlMs', o.limitUsageTtlMs, 2000),
    manifestIntervalSec: positive('manifestIntervalSec', o.manifestIntervalSec, 86_400),
    livePollMs: positive('livePollMs', o.livePollMs, 1000),
    livePingMs: positive('livePingMs', o.livePingMs, 15_000),
    closeGraceMs: positive('closeGraceMs', o.closeGraceMs, 2000),
    batchUpserts: Math.min(MAX_UPSERTS, Math.floor(positive('batchUpserts', o.batchUpserts, MAX_UPSERTS))),
    batchFacts: Math.min(MAX_FACTS, Math.floor(positive('batchFacts', o.batchFacts, MAX_FACTS))),
    protocolVersion: o.protocolVersion ?? PROTOCOL_VERSION,
  }
}
