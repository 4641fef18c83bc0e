import type { Skill, SkillCatalog } from '../ingest/skills.js'
import type { LimitSpec } from '../ingest/directives.js'
import type { Actor } from './actor.js'
import type { SquadSkill } from './skills.js'
import type { BillingType } from './governance.js'
import type { Storage } from './storage.js'

/** `enforce` gates a never-enrolled (or revoked, or rejected) instance; `advisory` never gates. */
export type TowerMode = 'enforce' | 'advisory'

/**
 * TowerClient: reports this instance to a control tower (ingest protocol v1), applies its
 * directives and pulls its skills. It reads the outbox the services fill; nothing on a request
 * path ever waits for the tower. `towerClient()` from `@slaw/tower-client` implements it.
 *
 * Only `name`, `start` and `close` are required; core uses each optional member when present:
 * the auth hook asks `gate()`, the tower controls (`/api/tower…`) call `status`, `connect`,
 * `disconnect`, `reEnroll`, `syncNow` and `refreshSkills`, the skill service asks
 * `managesSkills()`, and checkouts ask `limitReached()`.
 */
export interface TowerClient {
  readonly name: string
  /** Loads the stored state and starts reporting in the background. Never waits on the tower. */
  start(ctx: TowerClientContext): Promise<void>
  /** Gate decision for `/api/*` requests (enforce mode): undefined lets the request through. */
  gate?(): { code: 'instance_not_enrolled'; message: string } | undefined
  /**
   * Reports now instead of at the next tick: one cycle (enroll or poll, heartbeat, sync until the
   * outbox is drained). Rejects with the reason when the tower could not be reached.
   */
  syncNow?(): Promise<void>
  status?(): Promise<TowerStatus>
  /** Points the client at a tower (remembered in storage) and starts enrolling there. */
  connect?(input: { towerUrl: string; mode?: TowerMode }): Promise<void>
  /** Stops reporting (remembered in storage): a disconnected instance is standalone and never gated. */
  disconnect?(): Promise<void>
  /** Forgets the enrollment and its key and enrolls again with the same identity. */
  reEnroll?(): Promise<void>
  /** True while enrolled (an active key) and connected: local skill authoring then answers 409. */
  managesSkills?(): boolean
  /**
   * True when a `hard` fleet limit's ceiling is reached: the cost ceiling for metered billing, the
   * token ceiling for subscription billing; with no billing type, either. Cheap: answered from
   * figures refreshed at most every few seconds.
   */
  limitReached?(billingType?: BillingType): Promise<boolean>
  /** Pulls the tower's skill catalog now (when enrolled and connected). */
  refreshSkills?(): Promise<void>
  /** Stops reporting and flushes the client's state to storage. The outbox keeps what is unsent. */
  close(): Promise<void>
}

export interface TowerClientContext {
  storage: Storage
  log: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void; error(obj: object, msg?: string): void }
  slawVersion: string
  /** Core's store for the tower's skill catalog, when this instance has one (read at each use). */
  skills(): TowerSkillsHook | undefined
}

/**
 * What core offers the tower client for skills (the skill service implements it). The client
 * does the HTTP (`GET /skills`, `GET /skills/{key}`); core decides what to store.
 */
export interface TowerSkillsHook {
  /**
   * Applies a pulled catalog: calls `fetchSkill` only for descriptors whose contentHash differs
   * from the stored copy, updates the others' descriptors, drops skills no longer published and
   * records `catalog.catalogVersion`, which it returns. `fetchSkill` resolves to null when the skill
   * was unpublished since the list, and rejects when the tower could not be asked.
   * A skill whose content cannot be stored here is skipped (its previous content kept) and told to
   * `onSkipped`, so the client can report it while the others apply.
   */
  applyCatalog(catalog: SkillCatalog, fetchSkill: (key: string) => Promise<Skill | null>, onSkipped?: (key: string, problem: string) => void): Promise<number>
  /** The catalog version applied last, or null before the first pull. */
  appliedCatalogVersion(): Promise<number | null>
  /** Installs catalog skill `key` into the squad; resolves to the squad skill. */
  installSkill(input: { key: string; squadId: string; actor: Actor }): Promise<SquadSkill>
}

/** What `GET /api/tower` shows. */
export interface TowerStatus {
  /**
   * `disabled`: no tower client; `disconnected`: a client without a tower (or disconnected by an
   * Operator); `enrolling`: enrolling; `pending`: waiting for approval; `connected`: enrolled and
   * reporting; `unreachable`: enrolled, backing off while the tower is away; `rejected`, `revoked`:
   * the tower refused this instance (terminal until re-enroll); `protocol_unsupported`: the tower
   * no longer accepts this protocol version.
   */
  state: 'disabled' | 'disconnected' | 'enrolling' | 'pending' | 'connected' | 'unreachable' | 'rejected' | 'revoked' | 'protocol_unsupported'
  mode: TowerMode | null
  towerUrl: string | null
  enrollmentState: 'pending' | 'active' | 'rejected' | 'revoked' | null
  /** True while `/api/*` answers 403 instance_not_enrolled. */
  gated: boolean
  instanceId: string | null
  machineId: string | null
  /** True on the node that holds the reporting lease. */
  leader: boolean
  lastHeartbeatAt: Date | null
  lastSyncAt: Date | null
  /** Outbox rows not yet acknowledged by the tower. */
  spoolDepth: number
  /** Optional: when the oldest of those rows was written (null when there is none), for `/metrics`. */
  oldestUnsentAt?: Date | null
  appliedLimitVersion: number | null
  appliedSkillCatalogVersion: number | null
  /** The applied fleet limit, when one is. */
  limit: LimitSpec | null
  lastError: { code: string; message: string; at: Date } | null
  /**
   * Records the tower refused (400) and skills that could not be applied, parked so the rest flows.
   * Optional for older clients; `GET /api/tower` shows 0 and null without them.
   */
  rejectedCount?: number
  /** The latest of those: the tower's error code, the record's wire type (or `skill`) and its localId (or key). */
  lastRejection?: TowerRejection | null
}

/** One record the tower refused, or one skill this instance could not apply. */
export interface TowerRejection {
  code: string
  type: string
  localId: string
  message: string
  at: Date
}
