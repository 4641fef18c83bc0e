import type { Storage, TowerMode } from '@slaw/core'
import type { EnrollmentState, LimitSpec, ResyncType } from '@slaw/core/ingest'

/** Who this instance is to every tower; written once, shared by every node of the instance. */
export interface IdentityState {
  salt: string
  machineId: string
  instanceId: string
}

/** The enrollment with the tower at `towerUrl`, for the identity it was made with. */
export interface EnrollmentRecord {
  towerUrl: string
  machineId: string
  instanceId: string
  enrollmentId: string | null
  state: EnrollmentState | null
  pollIntervalSec: number
  /** The per-instance key; never logged. */
  apiKey: string | null
  /** An enrollment of this instance with this tower was active once: from then on, a tower away never gates. */
  everActive: boolean
}

/** An Operator's connect or disconnect; applies while the configured URL is still `configuredUrl`. */
interface ControlRecord {
  url: string | null
  mode: TowerMode
  configuredUrl: string | null
  at: string
}

export interface ReportRecord {
  lastHeartbeatAt: string | null
  lastSyncAt: string | null
  lastError: { code: string; message: string; at: string } | null
  /** The tower could not be reached on the last try (backing off). */
  unreachable: boolean
  protocolUnsupported: boolean
}

/** A record the tower refused (400) or a skill this instance could not apply, as GET /api/tower shows it. */
export interface RejectionRecord {
  code: string
  type: string
  localId: string
  message: string
  at: string
}

/** What was parked so the rest could flow: how many, and the latest. */
interface RejectionsRecord {
  count: number
  last: RejectionRecord | null
}

export interface TowerStateData {
  identity?: IdentityState
  enrollment?: EnrollmentRecord
  control?: ControlRecord
  /** The acknowledged outbox seq (decimal string) for the current enrollment's tower. */
  cursor?: string
  syncIntervalSec?: number
  limit?: LimitSpec
  /** `${version}:${month}` of the last limit warning and ceiling alert, so each is raised once. */
  limitAlerts?: { warned: string | null; reached: string | null }
  /** Full resyncs in progress: type → last id sent ('' before the first page). */
  resync?: Partial<Record<ResyncType, string>>
  manifest?: { lastAt: string | null; requested: boolean }
  /** The highest catalogVersion a skills_updated hinted at. */
  skillsHint?: number
  report?: ReportRecord
  rejections?: RejectionsRecord
}

type StateKey = keyof TowerStateData

/**
 * The client's state, mirrored from `storage.towerState` (a key/value table): read whole at each
 * cycle, so another node's writes (an Operator's connect) are seen, and written key by key.
 */
export class StateStore {
  data: TowerStateData = {}

  constructor(private readonly storage: Storage) {}

  async load(): Promise<TowerStateData> {
    this.data = (await this.storage.towerState.getAll()) as TowerStateData
    return this.data
  }

  async save(patch: Partial<TowerStateData>): Promise<void> {
    const put: Record<string, unknown> = {}
    const remove: string[] = []
    for (const [key, value] of Object.entries(patch) as Array<[StateKey, unknown]>) {
      if (value === undefined) {
        delete this.data[key]
        remove.push(key)
      } else {
        ;(this.data as Record<string, unknown>)[key] = value
        put[key] = value
      }
    }
    if (remove.length) await this.storage.towerState.remove(remove)
    if (Object.keys(put).length) await this.storage.towerState.put(put)
  }

  report(): ReportRecord {
    return this.data.report ?? { lastHeartbeatAt: null, lastSyncAt: null, lastError: null, unreachable: false, protocolUnsupported: false }
  }
}
