import './formats.js'
import { randomBytes } from 'node:crypto'
import { Value } from '@sinclair/typebox/value'
import type { BillingType, TowerClient, TowerClientContext, TowerMode, TowerStatus } from '@slaw/core'
import { uuidv7 } from '@slaw/core'
import {
  Directive, ENROLLMENT_STATES, MAX_SYNC_INTERVAL_SEC, MIN_SYNC_INTERVAL_SEC, RESYNC_TYPES, Skill, SkillCatalog,
  type EnrollResponse, type EnrollmentState, type Fact, type HeartbeatRequest, type HeartbeatResponse, type ManifestResponse, type ResyncType,
  type SyncResponse, type Upsert,
} from '@slaw/core/ingest'
import { Backoff } from './backoff.js'
import { AbortedError, IngestError, IngestHttp } from './http.js'
import { hostName, isValidInstanceId, machineIdFor, newInstanceId, newSalt, osName } from './identity.js'
import { LimitEnforcer, dayStart, monthOf } from './limits.js'
import { LiveChannel } from './live.js'
import { resolveOptions, type ResolvedOptions, type TowerClientOptions } from './options.js'
import { StateStore, type EnrollmentRecord, type IdentityState, type ReportRecord, type TowerStateData } from './state.js'
import { fillBatch, padCursor, resyncPayload, seqGreater, toWire, type WireOptions } from './wire.js'

/** The storage lease the reporting node holds. */
export const REPORTER_LEASE = 'tower_reporter'

/** Rows per page of a full resync. */
const RESYNC_PAGE = 1000

/** Keys of the state that describe one enrollment with one tower; a new tower or identity starts them afresh. */
const perTowerKeys = ['enrollment', 'cursor', 'syncIntervalSec', 'limit', 'limitAlerts', 'resync', 'manifest', 'skillsHint', 'report'] as const

type Waiter = { resolve(): void; reject(err: Error): void }

/**
 * Reports a slaw instance to a control tower over ingest protocol v1 (SERVICE-SPEC interface B,
 * DECISIONS.md section 5). Plug it into `createInstance({ tower: towerClient({ url }) })`.
 *
 * - One loop per node; only the node holding the `tower_reporter` lease in storage talks to the
 *   tower, so several nodes of one instance report once. The others re-read the shared state to
 *   answer the gate, the fleet limit and the status.
 * - Enrollment needs no token; the key it yields is kept in storage and never logged.
 * - Sync drains the transactional outbox in batches; the cursor moves only after the tower
 *   acknowledged the batch, so a crash, a lost acknowledgement or a tower away loses nothing and the
 *   tower's deduplication keeps it from storing anything twice.
 * - 429, 5xx and network errors back off (1 s doubling to 5 min, jitter, Retry-After honoured); the
 *   instance keeps serving throughout, as nothing on a request path waits for the tower.
 */
export function towerClient(options: TowerClientOptions = {}): TowerClient {
  return new DefaultTowerClient(resolveOptions(options))
}

class DefaultTowerClient implements TowerClient {
  readonly name = 'tower-client'
  private ctx: TowerClientContext | undefined
  private store: StateStore | undefined
  private loaded = false
  private readonly holder = `${hostName()}:${process.pid}:${randomBytes(4).toString('hex')}`
  private leader = false
  private stopped = false
  private loop: Promise<void> | undefined
  private wakeUp: (() => void) | undefined
  private forced = false
  private waiters: Waiter[] = []
  private controller = new AbortController()
  private mutex: Promise<void> = Promise.resolve()
  private readonly backoff: Backoff
  private retryAt = 0
  private lastHeartbeat = 0
  private lastSyncCheck = 0
  private lastPoll = 0
  private lastLoad = 0
  private leaseAt = 0
  private readonly startedAt = Date.now()
  private live: LiveChannel | undefined
  private readonly limits: LimitEnforcer
  /** The last sync failed for a reason other than reachability: heartbeats say `degraded`. */
  private degraded = false

  constructor(private readonly options: ResolvedOptions) {
    this.backoff = new Backoff(options.retryBaseMs, options.retryMaxMs)
    this.limits = new LimitEnforcer(() => this.ctx?.storage, options.limitUsageTtlMs)
  }

  // Lifecycle -------------------------------------------------------------------------------

  async start(ctx: TowerClientContext): Promise<void> {
    if (this.ctx) throw new Error('towerClient: start() was called twice')
    this.ctx = ctx
    this.store = new StateStore(ctx.storage)
    await this.store.load()
    await this.ensureIdentity()
    this.loaded = true
    this.loop = this.run()
  }

  async close(): Promise<void> {
    if (!this.ctx || this.stopped) return
    this.stopped = true
    this.wakeUp?.()
    // An in-flight call may finish (its acknowledgement then moves the cursor); after the grace it is cut.
    const grace = setTimeout(() => this.controller.abort(), this.options.closeGraceMs)
    await this.loop
    clearTimeout(grace)
    this.closeLive('instance closing')
    for (const w of this.waiters.splice(0)) w.reject(new Error('the tower client is closing'))
    if (this.leader) {
      // Everything is written as it changes; write what this node owns once more, then let another node report.
      const d = this.store!.data
      await this.store!.save({ ...(d.cursor !== undefined ? { cursor: d.cursor } : {}), ...(d.report ? { report: d.report } : {}) }).catch((err) =>
        this.ctx!.log.warn({ err: errInfo(err) }, 'tower client state flush failed'),
      )
      await this.ctx.storage.towerState.releaseLease(REPORTER_LEASE, this.holder).catch(() => undefined)
      this.leader = false
    }
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let delay: number
      try {
        delay = await this.exclusive(() => this.cycle())
      } catch (err) {
        this.ctx!.log.error({ err: errInfo(err) }, 'tower client cycle failed')
        delay = this.options.refreshMs
      }
      if (this.stopped) break
      await this.sleep(Math.max(5, delay))
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.wakeUp = undefined
        resolve()
      }
      const timer = setTimeout(done, ms)
      timer.unref()
      this.wakeUp = done
    })
  }

  private kick(force = false): void {
    if (force) this.forced = true
    this.wakeUp?.()
  }

  /** Cycles and Operator actions never overlap; an Operator action cuts the cycle's call short first. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.mutex.then(fn, fn)
    this.mutex = run.then(
      () => undefined,
      () => undefined,
    )
    return run
  }

  private async operatorAction(fn: () => Promise<void>): Promise<void> {
    if (!this.ctx) throw new Error('the tower client has not started')
    this.controller.abort()
    await this.exclusive(async () => {
      this.controller = new AbortController()
      await this.store!.load()
      await fn()
    })
    this.backoff.reset()
    this.retryAt = 0
    this.kick(true)
  }

  // The state seen from outside ---------------------------------------------------------------

  /** The tower URL and mode in effect: an Operator's connect or disconnect wins while the configured URL is unchanged. */
  private effective(data: TowerStateData | undefined = this.store?.data): { url: string | null; mode: TowerMode } {
    const configured = this.options.url ?? null
    const c = data?.control
    if (c && c.configuredUrl === configured) return { url: c.url, mode: c.mode }
    return { url: configured, mode: this.options.mode }
  }

  private enrollmentFor(url: string | null, data: TowerStateData | undefined = this.store?.data): EnrollmentRecord | undefined {
    const e = data?.enrollment
    const id = data?.identity
    if (!e || !url || !id || e.towerUrl !== url || e.machineId !== id.machineId || e.instanceId !== id.instanceId) return undefined
    return e
  }

  gate(): { code: 'instance_not_enrolled'; message: string } | undefined {
    return this.gateFor(this.store?.data)
  }

  private gateFor(data: TowerStateData | undefined): { code: 'instance_not_enrolled'; message: string } | undefined {
    const { url, mode } = this.effective(data)
    if (mode !== 'enforce' || !url) return undefined
    const e = this.loaded ? this.enrollmentFor(url, data) : undefined
    if (e?.everActive && e.state !== 'rejected' && e.state !== 'revoked') return undefined
    const why =
      e?.state === 'rejected'
        ? 'The control tower rejected this instance.'
        : e?.state === 'revoked'
          ? 'The control tower revoked this instance.'
          : e?.state === 'pending'
            ? 'This instance is waiting for its control tower to approve its enrollment.'
            : 'This instance is not enrolled with its control tower yet.'
    return { code: 'instance_not_enrolled', message: `${why} In enforce mode the API answers once the tower approves it; an Operator can follow and act through /api/tower.` }
  }

  managesSkills(): boolean {
    const { url } = this.effective()
    const e = this.enrollmentFor(url)
    return !!e && e.state === 'active' && !!e.apiKey
  }

  async limitReached(billingType?: BillingType): Promise<boolean> {
    const { url } = this.effective()
    const spec = url ? this.store?.data.limit : undefined
    if (!spec || spec.mode !== 'hard') return false
    return LimitEnforcer.reached(spec, await this.limits.current(), billingType)
  }

  async status(): Promise<TowerStatus> {
    const ctx = this.requireCtx()
    // A fresh read, so any node answers with what the reporting node wrote.
    const data = (await ctx.storage.towerState.getAll()) as TowerStateData
    const { url, mode } = this.effective(data)
    const e = this.enrollmentFor(url, data)
    const r = data.report
    const hook = ctx.skills()
    const cursor = e ? (data.cursor ?? '0') : '0'
    return {
      state: stateOf(url, e, r),
      mode,
      towerUrl: url,
      enrollmentState: e?.state ?? null,
      gated: this.gateFor(data) !== undefined,
      instanceId: data.identity?.instanceId ?? null,
      machineId: data.identity?.machineId ?? null,
      leader: this.leader,
      lastHeartbeatAt: e && r?.lastHeartbeatAt ? new Date(r.lastHeartbeatAt) : null,
      lastSyncAt: e && r?.lastSyncAt ? new Date(r.lastSyncAt) : null,
      spoolDepth: await ctx.storage.outbox.countAfter(cursor),
      oldestUnsentAt: (await ctx.storage.outbox.readAfter(cursor, 1))[0]?.createdAt ?? null,
      appliedLimitVersion: e && data.limit ? data.limit.version : null,
      appliedSkillCatalogVersion: hook ? await hook.appliedCatalogVersion() : null,
      limit: e && data.limit ? data.limit : null,
      lastError: r?.lastError ? { code: r.lastError.code, message: r.lastError.message, at: new Date(r.lastError.at) } : null,
    }
  }

  // Operator controls ----------------------------------------------------------------------

  async connect(input: { towerUrl: string; mode?: TowerMode }): Promise<void> {
    const url = input.towerUrl.replace(/\/+$/, '')
    await this.operatorAction(async () => {
      const store = this.store!
      const mode = input.mode ?? this.effective().mode
      if (store.data.enrollment && store.data.enrollment.towerUrl !== url) await this.forgetTower()
      await store.save({ control: { url, mode, configuredUrl: this.options.url ?? null, at: new Date().toISOString() } })
      this.ctx!.log.info({ towerUrl: url, mode }, 'tower connect requested by an Operator')
    })
  }

  async disconnect(): Promise<void> {
    await this.operatorAction(async () => {
      const mode = this.effective().mode
      await this.store!.save({ control: { url: null, mode, configuredUrl: this.options.url ?? null, at: new Date().toISOString() } })
      this.closeLive('disconnected')
      this.ctx!.log.info({}, 'tower disconnected by an Operator')
    })
  }

  async reEnroll(): Promise<void> {
    await this.operatorAction(async () => {
      const store = this.store!
      const { url } = this.effective()
      if (!url) throw new Error('no tower is configured: connect first')
      const e = this.enrollmentFor(url)
      if (e) await store.save({ enrollment: { ...e, enrollmentId: null, state: null, apiKey: null } })
      await this.saveReport({ lastError: null, unreachable: false, protocolUnsupported: false })
      this.closeLive('re-enrolling')
      this.ctx!.log.info({}, 'tower re-enrollment requested by an Operator')
    })
  }

  syncNow(): Promise<void> {
    if (!this.ctx || this.stopped) return Promise.reject(new Error('the tower client is not running'))
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ resolve, reject })
      this.kick(true)
    })
  }

  async refreshSkills(): Promise<void> {
    await this.exclusive(async () => {
      const { url } = this.effective()
      const e = this.enrollmentFor(url)
      if (url && e?.state === 'active' && e.apiKey) await this.pullSkills(this.http(url), e.apiKey)
    })
  }

  // One cycle ------------------------------------------------------------------------------

  /** Does what is due and returns the milliseconds until something is due again. */
  private async cycle(): Promise<number> {
    const ctx = this.ctx!
    const store = this.store!
    if (this.controller.signal.aborted) this.controller = new AbortController()
    const waiters = this.waiters.splice(0)
    const forced = this.forced
    this.forced = false
    const settle = (err?: Error) => {
      for (const w of waiters) (err ? w.reject(err) : w.resolve())
    }
    // The reporting node re-reads the shared state every refreshMs (an Operator may act on another
    // node); its own writes keep its copy current in between. Other nodes re-read every cycle.
    if (!this.leader || forced || Date.now() - this.lastLoad >= this.options.refreshMs) {
      await store.load()
      this.lastLoad = Date.now()
    }
    const { url } = this.effective()
    if (!url) {
      this.closeLive('disconnected')
      if (this.leader) {
        await ctx.storage.towerState.releaseLease(REPORTER_LEASE, this.holder)
        this.leader = false
      }
      settle(new Error('no control tower is connected'))
      return this.options.refreshMs
    }
    const wasLeader = this.leader
    // Renewed at a third of its length, not every cycle: one write less per sync.
    if (!this.leader || Date.now() - this.leaseAt >= this.options.leaseMs / 3) {
      const at = Date.now()
      this.leader = await ctx.storage.towerState.acquireLease(REPORTER_LEASE, this.holder, this.options.leaseMs)
      if (this.leader) this.leaseAt = at
    }
    if (!this.leader) {
      this.closeLive('another node reports')
      settle(new Error('another node of this instance reports to the tower'))
      return Math.min(this.options.refreshMs, this.options.leaseMs / 2)
    }
    if (!wasLeader) ctx.log.info({ holder: this.holder }, 'this node reports to the control tower')
    // A stored enrollment for another tower or identity is over: start afresh with this one.
    if (store.data.enrollment && !this.enrollmentFor(url)) await this.forgetTower()

    const now = Date.now()
    if (!forced && now < this.retryAt) {
      settle()
      return this.retryAt - now
    }
    const renew = this.options.leaseMs / 3
    try {
      const next = await this.report(url, forced)
      this.backoff.reset()
      this.retryAt = 0
      const r = store.report()
      if (r.unreachable || r.protocolUnsupported) await this.saveReport({ unreachable: false, protocolUnsupported: false })
      settle()
      return Math.min(next, renew)
    } catch (err) {
      if (err instanceof AbortedError) {
        settle(new Error('interrupted'))
        return 0
      }
      const { delay, retryable } = await this.onError(err)
      settle(retryable ? (err as Error) : undefined)
      return Math.min(delay, renew)
    }
  }

  private http(url: string): IngestHttp {
    return new IngestHttp(url, this.options.requestTimeoutMs)
  }

  /** Enrollment, then (once active) heartbeat, sync, reconciliation, skills and limit alerts as due. */
  private async report(url: string, forced: boolean): Promise<number> {
    const store = this.store!
    const http = this.http(url)
    let e = this.enrollmentFor(url)
    if (e?.state === 'rejected' || e?.state === 'revoked') {
      // Terminal: no more calls until an Operator re-enrolls (or the tower is changed).
      this.closeLive(`enrollment ${e.state}`)
      return this.options.refreshMs
    }
    if (!e || !e.enrollmentId || !e.state || (e.state === 'active' && !e.apiKey)) {
      e = await this.enroll(http, url, e)
    } else if (e.state === 'pending') {
      const wait = e.pollIntervalSec * 1000 - (Date.now() - this.lastPoll)
      if (!forced && wait > 0) return wait
      e = await this.poll(http, e)
    }
    if (e.state !== 'active' || !e.apiKey) {
      if (e.state === 'pending') return e.pollIntervalSec * 1000
      // No state: the key has to be recovered by enrolling again, at once.
      return e.state === null ? 0 : this.options.refreshMs
    }
    const apiKey = e.apiKey
    const heartbeatMs = this.options.heartbeatSec * 1000
    const syncMs = (store.data.syncIntervalSec ?? this.options.syncSec) * 1000
    if (forced || Date.now() - this.lastHeartbeat >= heartbeatMs) await this.heartbeat(http, apiKey)
    const syncDue = forced || Date.now() - this.lastSyncCheck >= syncMs
    // A reconciliation the tower asked for (or the nightly one) and a queued resync do not wait for the
    // sync interval; the outbox is drained first so the counts compared are current.
    if (syncDue || this.reconcileDue() || Object.keys(store.data.resync ?? {}).length > 0) {
      if (syncDue) this.lastSyncCheck = Date.now()
      await this.drain(http, apiKey)
      await this.optional('reconciliation', () => this.reconcile(http, apiKey))
      await this.resync(http, apiKey)
    }
    await this.optional('skills', async () => {
      const hook = this.ctx!.skills()
      const hint = store.data.skillsHint
      if (hook && hint !== undefined && hint > ((await hook.appliedCatalogVersion()) ?? -1)) await this.pullSkills(http, apiKey)
    })
    await this.optional('limit alerts', () => this.limitAlerts())
    const untilHeartbeat = heartbeatMs - (Date.now() - this.lastHeartbeat)
    const untilSync = syncMs - (Date.now() - this.lastSyncCheck)
    return Math.max(0, Math.min(untilHeartbeat, untilSync))
  }

  /** Runs a step whose failure must not hold up the rest; reachability and auth errors still stop the cycle. */
  private async optional(what: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn()
    } catch (err) {
      if (err instanceof AbortedError) throw err
      if (err instanceof IngestError && (err.retryable || err.status === 401 || err.status === 403 || err.status === 426)) throw err
      this.ctx!.log.warn({ err: errInfo(err) }, `tower ${what} failed`)
      await this.saveReport({ lastError: errorRecord(err) })
    }
  }

  // Enrollment -----------------------------------------------------------------------------

  private identity(): IdentityState {
    return this.store!.data.identity!
  }

  private async ensureIdentity(): Promise<void> {
    const store = this.store!
    const id = store.data.identity
    const instanceId = this.options.instanceId ?? (id?.instanceId && isValidInstanceId(id.instanceId) ? id.instanceId : newInstanceId())
    const salt = id?.salt ?? newSalt()
    const machineId = this.options.machineId ?? id?.machineId ?? machineIdFor(salt)
    if (!id || id.instanceId !== instanceId || id.machineId !== machineId || id.salt !== salt) await store.save({ identity: { salt, machineId, instanceId } })
  }

  /** Forgets everything tied to the previous tower or identity (the outbox replays from the start for the new one). */
  private async forgetTower(): Promise<void> {
    this.closeLive('tower changed')
    const patch: Partial<TowerStateData> = {}
    for (const key of perTowerKeys) (patch as Record<string, undefined>)[key] = undefined
    await this.store!.save(patch)
    this.lastHeartbeat = 0
    this.lastSyncCheck = 0
  }

  private async enroll(http: IngestHttp, url: string, previous: EnrollmentRecord | undefined): Promise<EnrollmentRecord> {
    const id = this.identity()
    const body = {
      protocolVersion: this.options.protocolVersion,
      instance: { machineId: id.machineId, instanceId: id.instanceId, hostname: hostName(), os: osName(), slawVersion: this.ctx!.slawVersion.slice(0, 32) },
      capabilities: { reportIssueTitles: this.options.reportIssueTitles, liveStream: this.options.liveStream },
      ...(this.options.enrollmentSecret ? { enrollmentSecret: this.options.enrollmentSecret } : {}),
    }
    const res = await http.post<EnrollResponse>('/enroll', body, { signal: this.controller.signal })
    return this.recordEnrollment(url, previous, res.body, 'enroll')
  }

  private async poll(http: IngestHttp, e: EnrollmentRecord): Promise<EnrollmentRecord> {
    this.lastPoll = Date.now()
    const res = await http.post<EnrollResponse>('/enroll/poll', { protocolVersion: this.options.protocolVersion, enrollmentId: e.enrollmentId }, { signal: this.controller.signal })
    return this.recordEnrollment(e.towerUrl, e, res.body, 'poll')
  }

  private async recordEnrollment(url: string, previous: EnrollmentRecord | undefined, body: EnrollResponse, via: 'enroll' | 'poll'): Promise<EnrollmentRecord> {
    if (!body || typeof body.enrollmentId !== 'string' || !ENROLLMENT_STATES.includes(body.state as EnrollmentState)) {
      throw new IngestError(502, 'invalid_response', `${via}: the tower answered without an enrollment`)
    }
    const id = this.identity()
    const apiKey = typeof body.apiKey === 'string' && body.apiKey ? body.apiKey : null
    let state: EnrollmentState | null = body.state
    let enrollmentId: string | null = body.enrollmentId
    if (state === 'active' && !apiKey && via === 'poll') {
      // The key of this enrollment was handed out and never reached us: enroll again (key recovery).
      state = null
      enrollmentId = null
    }
    const record: EnrollmentRecord = {
      towerUrl: url,
      machineId: id.machineId,
      instanceId: id.instanceId,
      enrollmentId,
      state,
      pollIntervalSec: Number.isInteger(body.pollIntervalSec) && body.pollIntervalSec > 0 ? body.pollIntervalSec : 10,
      apiKey: state === 'active' ? apiKey : null,
      everActive: (previous?.everActive ?? false) || (state === 'active' && !!apiKey),
    }
    await this.store!.save({ enrollment: record })
    if (state === 'pending') this.lastPoll = Date.now()
    if (record.state === 'active' && record.apiKey && previous?.apiKey !== record.apiKey) this.ctx!.log.info({ enrollmentId: record.enrollmentId }, 'enrolled with the control tower')
    else if (record.state !== previous?.state) this.ctx!.log.info({ enrollmentId: record.enrollmentId, state: record.state }, 'tower enrollment state')
    return record
  }

  // Heartbeat, sync, manifest --------------------------------------------------------------

  private async heartbeat(http: IngestHttp, apiKey: string): Promise<void> {
    const ctx = this.ctx!
    const store = this.store!
    this.lastHeartbeat = Date.now()
    const now = new Date()
    const month = monthOf(now)
    const f = await ctx.storage.towerState.figures({ dayStart: dayStart(now), monthStart: month.start, month: month.key })
    const hook = ctx.skills()
    const appliedCatalog = hook ? await hook.appliedCatalogVersion() : undefined
    const body: HeartbeatRequest = {
      protocolVersion: this.options.protocolVersion,
      sentAt: now.toISOString(),
      status: this.degraded ? 'degraded' : 'ok',
      uptimeSec: Math.floor((Date.now() - this.startedAt) / 1000),
      counts: { squads: f.squads, agents: f.agents, activeRuns: f.activeRuns, openIssues: f.openIssues },
      spend: { todayCents: f.todayCents, monthCents: f.monthCents },
      lastEventCursor: store.data.cursor !== undefined ? padCursor(store.data.cursor) : null,
      appliedLimitVersion: store.data.limit?.version ?? 0,
      ...(hook ? { appliedSkillCatalogVersion: appliedCatalog ?? 0 } : {}),
    }
    const res = await http.post<HeartbeatResponse>('/heartbeat', body, { apiKey, signal: this.controller.signal })
    await this.saveReport({ lastHeartbeatAt: new Date().toISOString() })
    await this.applyDirectives(res.body.directives)
  }

  private wireOptions(): WireOptions {
    return { reportIssueTitles: this.options.reportIssueTitles }
  }

  /** Sends the outbox after the acknowledged cursor, batch by batch, until nothing is left. */
  private async drain(http: IngestHttp, apiKey: string): Promise<void> {
    const ctx = this.ctx!
    const store = this.store!
    const limits = { upserts: this.options.batchUpserts, facts: this.options.batchFacts }
    const readLimit = limits.upserts + limits.facts
    for (;;) {
      if (this.stopped) return
      const after = store.data.cursor ?? '0'
      const rows = await ctx.storage.outbox.readAfter(after, readLimit)
      if (!rows.length) return
      const batch = fillBatch(rows, this.wireOptions(), limits)
      for (const s of batch.skipped) ctx.log.warn({ seq: s.seq, reason: s.reason }, 'outbox row not sent to the tower')
      const directives = await this.sendBatch(http, apiKey, padCursor(batch.lastSeq!), batch.upserts, batch.facts)
      // The cursor moves only now, acknowledged; one write with the report.
      await store.save({ cursor: batch.lastSeq!, report: { ...store.report(), lastSyncAt: new Date().toISOString() } })
      await this.applyDirectives(directives)
      if (Date.now() - this.lastHeartbeat >= this.options.heartbeatSec * 1000) await this.heartbeat(http, apiKey)
      if (rows.length < readLimit && batch.rows === rows.length) return
    }
  }

  /** Sends one batch; resolves to the directives of the response once the tower acknowledged it. */
  private async sendBatch(http: IngestHttp, apiKey: string, batchCursor: string, upserts: Upsert[], facts: Fact[]): Promise<unknown> {
    const res = await http.post<SyncResponse>(
      '/sync',
      { protocolVersion: this.options.protocolVersion, sentAt: new Date().toISOString(), batchCursor, upserts, facts },
      { apiKey, signal: this.controller.signal },
    )
    const ack = res.body.acknowledgedCursor
    // Only an acknowledgement at or past what we proposed moves the cursor.
    if (typeof ack !== 'string' || seqGreater(batchCursor, ack)) {
      throw new IngestError(502, 'not_acknowledged', `sync: the tower acknowledged ${String(ack)} for batch ${batchCursor}`)
    }
    this.degraded = false
    return res.body.directives
  }

  private reconcileDue(): boolean {
    const m = this.store!.data.manifest ?? { lastAt: null, requested: false }
    return m.requested || !m.lastAt || Date.now() - Date.parse(m.lastAt) >= this.options.manifestIntervalSec * 1000
  }

  private async reconcile(http: IngestHttp, apiKey: string): Promise<void> {
    const ctx = this.ctx!
    const store = this.store!
    if (!this.reconcileDue()) return
    const counts = await ctx.storage.towerState.manifestCounts()
    const res = await http.post<ManifestResponse>('/manifest', { protocolVersion: this.options.protocolVersion, sentAt: new Date().toISOString(), counts }, { apiKey, signal: this.controller.signal })
    const types = (Array.isArray(res.body.resyncTypes) ? res.body.resyncTypes : []).filter((t): t is ResyncType => (RESYNC_TYPES as readonly string[]).includes(t))
    const resync = { ...(store.data.resync ?? {}) }
    for (const t of types) resync[t] = ''
    await store.save({ manifest: { lastAt: new Date().toISOString(), requested: false }, ...(types.length ? { resync } : {}) })
    if (types.length) ctx.log.info({ resyncTypes: types }, 'the tower asked for a resync')
  }

  /** Sends current rows of each queued type, page by page; progress is kept so a restart resumes. */
  private async resync(http: IngestHttp, apiKey: string): Promise<void> {
    const ctx = this.ctx!
    const store = this.store!
    for (const type of RESYNC_TYPES) {
      for (;;) {
        const after = store.data.resync?.[type]
        if (after === undefined || this.stopped) break
        const page = await this.resyncPage(type, after)
        const upserts: Upsert[] = []
        const facts: Fact[] = []
        for (const p of page.payloads) {
          const item = toWire(type === 'cost_event' ? 'fact' : 'upsert', p, this.wireOptions())
          if ('skip' in item) ctx.log.warn({ type, reason: item.skip }, 'row not resynced')
          else if (item.kind === 'upsert') upserts.push(item.value)
          else facts.push(item.value)
        }
        // A resync batch proposes the cursor already acknowledged: it carries no outbox rows.
        const directives = upserts.length || facts.length ? await this.sendBatch(http, apiKey, padCursor(store.data.cursor ?? '0'), upserts, facts) : []
        const resync = { ...(store.data.resync ?? {}) }
        if (page.lastId === null || page.count < RESYNC_PAGE) delete resync[type]
        else resync[type] = page.lastId
        await store.save({ resync, report: { ...store.report(), lastSyncAt: new Date().toISOString() } })
        await this.applyDirectives(directives)
      }
    }
  }

  private async resyncPage(type: ResyncType, after: string): Promise<{ payloads: Array<Record<string, unknown>>; lastId: string | null; count: number }> {
    const storage = this.ctx!.storage
    const month = monthOf(new Date()).key
    const spent = async (squadIds: string[], scope: 'squad' | 'agent') => {
      const out = new Map<string, number>()
      for (const squadId of new Set(squadIds)) {
        for (const r of await storage.costs.rollups(squadId, month, scope)) out.set(scope === 'squad' ? squadId : r.key, r.costCents)
      }
      return out
    }
    const ts = storage.towerState
    const last = <T extends { id: string }>(rows: T[]) => (rows.length ? rows[rows.length - 1]!.id : null)
    switch (type) {
      case 'squad': {
        const rows = await ts.scanSquads(after, RESYNC_PAGE)
        const s = await spent(rows.map((r) => r.id), 'squad')
        return { payloads: rows.map((r) => resyncPayload.squad(r, s.get(r.id) ?? 0)), lastId: last(rows), count: rows.length }
      }
      case 'agent': {
        const rows = await ts.scanAgents(after, RESYNC_PAGE)
        const s = await spent(rows.map((r) => r.squadId), 'agent')
        return { payloads: rows.map((r) => resyncPayload.agent(r, s.get(r.id) ?? 0)), lastId: last(rows), count: rows.length }
      }
      case 'project': {
        const rows = await ts.scanProjects(after, RESYNC_PAGE)
        return { payloads: rows.map(resyncPayload.project), lastId: last(rows), count: rows.length }
      }
      case 'issue': {
        const rows = await ts.scanIssues(after, RESYNC_PAGE)
        return { payloads: rows.map(resyncPayload.issue), lastId: last(rows), count: rows.length }
      }
      case 'cost_event': {
        const rows = await ts.scanCostEvents(after, RESYNC_PAGE)
        return { payloads: rows.map(resyncPayload.cost_event), lastId: last(rows), count: rows.length }
      }
    }
  }

  // Skills ---------------------------------------------------------------------------------

  private async pullSkills(http: IngestHttp, apiKey: string): Promise<void> {
    const hook = this.ctx!.skills()
    if (!hook) return
    const res = await http.get<unknown>('/skills', { apiKey, signal: this.controller.signal })
    if (!Value.Check(SkillCatalog, res.body)) throw new IngestError(502, 'invalid_response', 'GET /skills: the catalog does not match the protocol')
    const catalog = res.body
    const applied = await hook.applyCatalog(catalog, async (key) => {
      let one: { body: unknown }
      try {
        one = await http.get<unknown>(`/skills/${encodeURIComponent(key)}`, { apiKey, signal: this.controller.signal })
      } catch (err) {
        // Unpublished between the list and this fetch.
        if (err instanceof IngestError && err.code === 'skill_not_found') return null
        throw err
      }
      if (!Value.Check(Skill, one.body)) throw new IngestError(502, 'invalid_response', `GET /skills/${key}: the skill does not match the protocol`)
      return one.body
    })
    this.ctx!.log.info({ catalogVersion: applied, skills: catalog.skills.length }, 'tower skill catalog applied')
  }

  // Directives -----------------------------------------------------------------------------

  /** Applies directives one by one, in the order given; one the client does not know is skipped. */
  private async applyDirectives(list: unknown): Promise<void> {
    if (!Array.isArray(list)) return
    const ctx = this.ctx!
    const store = this.store!
    for (const raw of list) {
      const d = raw as Record<string, unknown>
      if (d && d.kind === 'set_sync_interval' && typeof d.seconds === 'number') {
        d.seconds = Math.min(MAX_SYNC_INTERVAL_SEC, Math.max(MIN_SYNC_INTERVAL_SEC, d.seconds))
      }
      if (!Value.Check(Directive, d)) {
        ctx.log.warn({ kind: typeof d?.kind === 'string' ? d.kind : null }, 'tower directive not understood; skipped')
        continue
      }
      const directive = d as Directive
      switch (directive.kind) {
        case 'set_sync_interval':
          await store.save({ syncIntervalSec: directive.seconds })
          ctx.log.info({ seconds: directive.seconds }, 'tower set the sync interval')
          break
        case 'request_reconciliation':
          await store.save({ manifest: { lastAt: store.data.manifest?.lastAt ?? null, requested: true } })
          break
        case 'request_live_stream':
          this.openLive(directive.durationSec)
          break
        case 'stop_live_stream':
          this.closeLive('the tower asked to stop')
          break
        case 'set_limits': {
          const applied = store.data.limit?.version ?? 0
          if (directive.limit.version <= applied) break
          await store.save({ limit: directive.limit })
          await this.limits.current(true)
          ctx.log.info({ version: directive.limit.version, mode: directive.limit.mode }, 'tower fleet limit applied')
          break
        }
        case 'skills_updated':
          if (directive.catalogVersion > (store.data.skillsHint ?? -1)) await store.save({ skillsHint: directive.catalogVersion })
          break
      }
    }
  }

  // Fleet limit alerts ---------------------------------------------------------------------

  /** Raises the warning at warnPercent and the ceiling alert at 100 %, once per limit version and month. */
  private async limitAlerts(): Promise<void> {
    const store = this.store!
    const spec = store.data.limit
    if (!spec || spec.mode === 'off') return
    // The same cached figures checkouts use (read again at most every limitUsageTtlMs).
    const usage = await this.limits.current()
    const percent = LimitEnforcer.percent(spec, usage)
    const tag = `${spec.version}:${monthOf(new Date()).key}`
    const alerts = { warned: null, reached: null, ...(store.data.limitAlerts ?? {}) }
    const raise: Array<'tower.limit_warning' | 'tower.limit_reached'> = []
    if (percent >= spec.warnPercent && alerts.warned !== tag) {
      raise.push('tower.limit_warning')
      alerts.warned = tag
    }
    if (percent >= 100 && alerts.reached !== tag) {
      raise.push('tower.limit_reached')
      alerts.reached = tag
    }
    if (!raise.length) return
    const storage = this.ctx!.storage
    const details = {
      limitVersion: spec.version,
      mode: spec.mode,
      percentUsed: Number.isFinite(percent) ? Math.round(percent) : 100,
      costLimitCents: spec.costLimitCents,
      tokenLimit: spec.tokenLimit,
      meteredCents: usage.meteredCents,
      subscriptionTokens: usage.subscriptionTokens,
    }
    await storage.transaction(async (tx) => {
      for (const squad of await tx.squads.list()) {
        for (const action of raise) {
          await tx.activity.insert({
            id: uuidv7(),
            squadId: squad.id,
            actorType: 'system',
            actorId: 'tower',
            action,
            entityType: 'tower_limit',
            entityId: String(spec.version),
            agentId: null,
            runId: null,
            details,
          })
        }
      }
      await tx.towerState.put({ limitAlerts: alerts })
    })
    store.data.limitAlerts = alerts
    this.ctx!.log.warn(details, raise.includes('tower.limit_reached') ? 'tower fleet limit reached' : 'tower fleet limit warning')
  }

  // Live channel ---------------------------------------------------------------------------

  private openLive(durationSec: number): void {
    const ctx = this.ctx!
    if (!this.options.liveStream) {
      ctx.log.info({}, 'the tower asked for a live stream; liveStream is off on this instance')
      return
    }
    if (this.live?.isOpen) {
      this.live.extend(durationSec)
      return
    }
    const { url } = this.effective()
    const e = this.enrollmentFor(url)
    if (!url || !e?.apiKey) return
    const live = new LiveChannel(
      {
        towerUrl: url,
        apiKey: e.apiKey,
        protocolVersion: this.options.protocolVersion,
        pingMs: this.options.livePingMs,
        pollMs: this.options.livePollMs,
        startSeq: this.store!.data.cursor ?? '0',
        log: ctx.log,
        readFacts: async (afterSeq) => {
          const rows = await ctx.storage.outbox.readAfter(afterSeq, 500)
          const facts: Fact[] = []
          for (const row of rows) {
            if (row.kind !== 'fact') continue
            const item = toWire('fact', row.payload, this.wireOptions())
            if (!('skip' in item) && item.kind === 'fact') facts.push(item.value)
          }
          return { facts, lastSeq: rows.length ? rows[rows.length - 1]!.seq : null }
        },
        onClose: () => {
          if (this.live === live) this.live = undefined
        },
      },
      durationSec,
    )
    this.live = live
    live.open()
  }

  private closeLive(reason: string): void {
    this.live?.close(reason)
    this.live = undefined
  }

  /** True while the live channel is open (for tests and status pages). */
  get liveOpen(): boolean {
    return !!this.live?.isOpen
  }

  // Errors ---------------------------------------------------------------------------------

  private async onError(err: unknown): Promise<{ delay: number; retryable: boolean }> {
    const ctx = this.ctx!
    const store = this.store!
    const { url } = this.effective()
    const e = this.enrollmentFor(url)
    if (!(err instanceof IngestError)) {
      ctx.log.error({ err: errInfo(err) }, 'tower client step failed')
      await this.saveReport({ lastError: errorRecord(err) }).catch(() => undefined)
      return this.retryIn(this.backoff.next(), false)
    }
    const lastError = errorRecord(err)
    if (err.retryable) {
      const delay = this.backoff.next(err.retryAfterMs)
      ctx.log.warn({ status: err.status, code: err.code, error: err.message, retryInMs: delay }, 'control tower unreachable; retrying later')
      await this.saveReport({ unreachable: true, lastError })
      return this.retryIn(delay, true)
    }
    switch (err.code) {
      case 'unauthorized':
        // The tower no longer knows our key: enroll again with the same identity (not gated once active).
        ctx.log.warn({}, 'the tower refused the instance key; enrolling again')
        if (e) await store.save({ enrollment: { ...e, enrollmentId: null, state: null, apiKey: null } })
        await this.saveReport({ lastError })
        return this.retryIn(this.backoff.next(), false)
      case 'enrollment_rejected':
      case 'enrollment_revoked': {
        const state = err.code === 'enrollment_rejected' ? 'rejected' : 'revoked'
        ctx.log.warn({ state }, 'the tower refused this instance')
        this.closeLive(`enrollment ${state}`)
        const base: EnrollmentRecord = e ?? {
          towerUrl: url!,
          machineId: this.identity().machineId,
          instanceId: this.identity().instanceId,
          enrollmentId: null,
          state: null,
          pollIntervalSec: 10,
          apiKey: null,
          everActive: false,
        }
        await store.save({ enrollment: { ...base, state, apiKey: null } })
        await this.saveReport({ lastError, unreachable: false })
        return { delay: this.options.refreshMs, retryable: false }
      }
      case 'enrollment_not_found':
        if (e) await store.save({ enrollment: { ...e, enrollmentId: null, state: null, apiKey: null } })
        return { delay: 0, retryable: false }
      case 'protocol_version_unsupported':
        ctx.log.error({ error: err.message }, 'the tower does not accept this protocol version; retrying at the longest interval')
        await this.saveReport({ protocolUnsupported: true, lastError })
        return this.retryIn(this.backoff.longest(), false)
      case 'enrollment_secret_required':
        ctx.log.error({ error: err.message }, 'the tower requires an enrollment secret (SVC_TOWER_ENROLLMENT_SECRET)')
        await this.saveReport({ lastError })
        return this.retryIn(this.backoff.longest(), false)
      default:
        // A request the tower refused (e.g. 400 invalid_payload): nothing is dropped; retry with backoff.
        this.degraded = true
        ctx.log.error({ status: err.status, code: err.code, error: err.message }, 'the tower refused a request')
        await this.saveReport({ lastError })
        return this.retryIn(this.backoff.next(), false)
    }
  }

  private retryIn(delay: number, retryable: boolean): { delay: number; retryable: boolean } {
    this.retryAt = Date.now() + delay
    return { delay, retryable }
  }

  private async saveReport(patch: Partial<ReportRecord>): Promise<void> {
    const store = this.store!
    await store.save({ report: { ...store.report(), ...patch } })
  }

  private requireCtx(): TowerClientContext {
    if (!this.ctx) throw new Error('the tower client has not started')
    return this.ctx
  }
}

function stateOf(url: string | null, e: EnrollmentRecord | undefined, r: ReportRecord | undefined): TowerStatus['state'] {
  if (!url) return 'disconnected'
  if (e?.state === 'rejected' || e?.state === 'revoked') return e.state
  if (r?.protocolUnsupported) return 'protocol_unsupported'
  if (!e || !e.state) return 'enrolling'
  if (e.state === 'pending') return 'pending'
  if (!e.apiKey) return 'enrolling'
  return r?.unreachable ? 'unreachable' : 'connected'
}

function errorRecord(err: unknown): { code: string; message: string; at: string } {
  return {
    code: err instanceof IngestError ? err.code : 'internal_error',
    message: err instanceof Error ? err.message : String(err),
    at: new Date().toISOString(),
  }
}

/** Error fields for a log line: name and message only (never a request with its headers). */
function errInfo(err: unknown): { name: string; message: string } {
  return err instanceof Error ? { name: err.name, message: err.message } : { name: 'Error', message: String(err) }
}
