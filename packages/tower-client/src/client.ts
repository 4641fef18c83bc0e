import './formats.js'
import { randomBytes } from 'node:crypto'
import type { BillingType, TowerClient, TowerClientContext, TowerMode, TowerStatus } from '@slaw/core'
import { Backoff, RetryGate } from './backoff.js'
import { Directives } from './directives.js'
import { Enrollment } from './enrollment.js'
import { sendHeartbeat } from './heartbeat.js'
import { AbortedError, IngestError, IngestHttp } from './http.js'
import { hostName } from './identity.js'
import { LimitEnforcer } from './limits.js'
import { LiveControl } from './live-control.js'
import { resolveOptions, type ResolvedOptions, type TowerClientOptions } from './options.js'
import { endsTheCycle, errInfo, errorRecord, isCredentialLost, type Reporter } from './reporter.js'
import { pullSkills } from './skills.js'
import { StateStore, type EnrollmentRecord, type ReportRecord, type TowerStateData } from './state.js'
import { OutboxSync } from './sync.js'

/** The storage lease the reporting node holds. */
export const REPORTER_LEASE = 'tower_reporter'

/** Keys of the state that describe one enrollment with one tower; a new tower or identity starts them afresh. */
const perTowerKeys = ['enrollment', 'cursor', 'syncIntervalSec', 'limit', 'limitAlerts', 'resync', 'manifest', 'skillsHint', 'report', 'rejections'] as const

type Waiter = { resolve(): void; reject(err: Error): void }

/**
 * Reports a slaw instance to a control tower over ingest protocol v1
 * (docs/ingest-protocol.md). Plug it into `createInstance({ tower: towerClient({ url }) })`.
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
  private lastLoad = 0
  private leaseAt = 0
  private readonly startedAt = Date.now()
  private readonly limits: LimitEnforcer
  /** What the parts below share (the instance, the state, the signal of the call in flight). */
  private readonly reporter: Reporter
  private readonly enrollment: Enrollment
  private readonly sync: OutboxSync
  private readonly directives: Directives
  private readonly live: LiveControl
  /** The last sync failed for a reason other than reachability: heartbeats say `degraded`. */
  private degraded = false
  /** Sync and skill pulls back off on their own, never holding up heartbeats. */
  private readonly syncGate: RetryGate
  private readonly skillsGate: RetryGate
  /** A step of this cycle failed (its error is recorded); `cycleFailure` when the tower was not reached. */
  private cycleFailed = false
  private cycleFailure: Error | undefined

  constructor(private readonly options: ResolvedOptions) {
    this.backoff = new Backoff(options.retryBaseMs, options.retryMaxMs)
    this.syncGate = new RetryGate(new Backoff(options.retryBaseMs, options.retryMaxMs))
    this.skillsGate = new RetryGate(new Backoff(options.retryBaseMs, options.retryMaxMs))
    this.limits = new LimitEnforcer(() => this.ctx?.storage, options.limitUsageTtlMs)
    this.reporter = this.shared()
    this.enrollment = new Enrollment(this.reporter)
    this.live = new LiveControl(this.reporter, () => this.liveTarget())
    this.directives = new Directives(this.reporter, this.limits, this.live)
    this.sync = new OutboxSync(this.reporter, {
      applyDirectives: (list) => this.directives.apply(list),
      heartbeatIfDue: async (http, apiKey) => {
        if (Date.now() - this.lastHeartbeat >= this.options.heartbeatSec * 1000) await this.heartbeat(http, apiKey)
      },
      acknowledged: () => {
        this.degraded = false
      },
    })
  }

  /** The shared view the parts read: live getters, as the context, the state and the signal change. */
  private shared(): Reporter {
    const client = this
    return {
      get ctx() {
        return client.requireCtx()
      },
      get store() {
        return client.store!
      },
      options: this.options,
      get signal() {
        return client.controller.signal
      },
      get stopped() {
        return client.stopped
      },
      wire: { reportIssueTitles: this.options.reportIssueTitles },
    }
  }

  /** The live channel connects to the tower in effect with this instance's key. */
  private liveTarget(): { url: string; apiKey: string } | undefined {
    const { url } = this.effective()
    const e = this.enrollmentFor(url)
    return url && e?.apiKey ? { url, apiKey: e.apiKey } : undefined
  }

  // Lifecycle -------------------------------------------------------------------------------

  async start(ctx: TowerClientContext): Promise<void> {
    if (this.ctx) throw new Error('towerClient: start() was called twice')
    this.ctx = ctx
    this.store = new StateStore(ctx.storage)
    await this.store.load()
    await this.enrollment.ensureIdentity()
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
    this.live.close('instance closing')
    for (const w of this.waiters.splice(0)) w.reject(new Error('the tower client is closing'))
    if (this.leader) {
      // Everything is written as it changes; write what this node owns once more, then let another node report.
      const d = this.store!.data
      const owned = { ...(d.cursor !== undefined ? { cursor: d.cursor } : {}), ...(d.report ? { report: d.report } : {}) }
      await this.store!.save(owned).catch((err) => this.ctx!.log.warn({ err: errInfo(err) }, 'tower client state flush failed'))
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
    this.syncGate.succeeded()
    this.skillsGate.succeeded()
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
    const next = 'In enforce mode the API answers once the tower approves it; an Operator can follow and act through /api/tower.'
    return { code: 'instance_not_enrolled', message: `${why} ${next}` }
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
      rejectedCount: e ? (data.rejections?.count ?? 0) : 0,
      lastRejection: e && data.rejections?.last ? { ...data.rejections.last, at: new Date(data.rejections.last.at) } : null,
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
      this.live.close('disconnected')
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
      this.live.close('re-enrolling')
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
      if (url && e?.state === 'active' && e.apiKey) await pullSkills(this.reporter, this.http(url), e.apiKey)
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
      for (const w of waiters) err ? w.reject(err) : w.resolve()
    }
    // The reporting node re-reads the shared state every refreshMs (an Operator may act on another
    // node); its own writes keep its copy current in between. Other nodes re-read every cycle.
    if (!this.leader || forced || Date.now() - this.lastLoad >= this.options.refreshMs) {
      await store.load()
      this.lastLoad = Date.now()
    }
    const { url } = this.effective()
    if (!url) {
      this.live.close('disconnected')
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
      this.live.close('another node reports')
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
    this.cycleFailed = false
    this.cycleFailure = undefined
    try {
      const next = await this.report(url, forced)
      this.backoff.reset()
      this.retryAt = 0
      const r = store.report()
      // Everything asked of the tower this cycle answered: the status tells the truth again.
      const allWell = !this.cycleFailed && !this.syncGate.failing && !this.skillsGate.failing
      if (allWell && (r.unreachable || r.protocolUnsupported || r.lastError)) {
        await this.saveReport({ unreachable: false, protocolUnsupported: false, lastError: null })
      }
      settle(this.cycleFailure)
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
      this.live.close(`enrollment ${e.state}`)
      return this.options.refreshMs
    }
    if (!e || !e.enrollmentId || !e.state || (e.state === 'active' && !e.apiKey)) {
      e = await this.enrollment.enroll(http, url, e)
    } else if (e.state === 'pending') {
      const wait = e.pollIntervalSec * 1000 - (Date.now() - this.enrollment.lastPoll)
      if (!forced && wait > 0) return wait
      e = await this.enrollment.poll(http, e)
    }
    if (e.state !== 'active' || !e.apiKey) {
      if (e.state === 'pending') return e.pollIntervalSec * 1000
      // No state: the key has to be recovered by enrolling again, at once.
      return e.state === null ? 0 : this.options.refreshMs
    }
    const apiKey = e.apiKey
    const heartbeatMs = this.options.heartbeatSec * 1000
    const syncMs = (store.data.syncIntervalSec ?? this.options.syncSec) * 1000
    // Heartbeats keep their own cadence: sync and skill pulls back off on their own gates below.
    if (forced || Date.now() - this.lastHeartbeat >= heartbeatMs) await this.heartbeat(http, apiKey)
    const syncDue = forced || Date.now() - this.lastSyncCheck >= syncMs
    // A reconciliation the tower asked for (or the nightly one) and a queued resync do not wait for the
    // sync interval; the outbox is drained first so the counts compared are current.
    const syncWanted = syncDue || this.sync.reconcileDue() || this.sync.resyncPending()
    if (syncWanted && this.syncGate.ready(Date.now(), forced)) {
      if (syncDue) this.lastSyncCheck = Date.now()
      await this.step('sync', this.syncGate, async () => {
        await this.sync.drain(http, apiKey)
        await this.optional('reconciliation', () => this.sync.reconcile(http, apiKey))
        await this.sync.resync(http, apiKey)
      })
    }
    const skillsWanted = await this.skillsBehind()
    if (skillsWanted && this.skillsGate.ready(Date.now(), forced)) {
      await this.step('skill pull', this.skillsGate, () => pullSkills(this.reporter, http, apiKey))
    }
    await this.optional('limit alerts', () => this.directives.limitAlerts())
    const now = Date.now()
    const untilHeartbeat = heartbeatMs - (now - this.lastHeartbeat)
    const untilSync = Math.max(syncMs - (now - this.lastSyncCheck), this.syncGate.waitMs(now))
    const untilSkills = skillsWanted && (await this.skillsBehind()) ? this.skillsGate.waitMs(now) : Infinity
    return Math.max(0, Math.min(untilHeartbeat, untilSync, untilSkills))
  }

  /** The tower hinted at a catalog newer than the one applied. */
  private async skillsBehind(): Promise<boolean> {
    const hook = this.ctx!.skills()
    const hint = this.store!.data.skillsHint
    return !!hook && hint !== undefined && hint > ((await hook.appliedCatalogVersion()) ?? -1)
  }

  /**
   * Runs sync or a skill pull. A failure backs off that step alone and is recorded (`unreachable`
   * when the tower was not reached); refused credentials and protocol still end the cycle.
   */
  private async step(what: string, gate: RetryGate, fn: () => Promise<void>): Promise<void> {
    try {
      await fn()
      gate.succeeded()
    } catch (err) {
      if (err instanceof AbortedError || endsTheCycle(err)) throw err
      const retryable = err instanceof IngestError && err.retryable
      const delay = gate.failed(Date.now(), err instanceof IngestError ? err.retryAfterMs : undefined)
      if (!retryable) this.degraded = true
      this.cycleFailed = true
      if (retryable) this.cycleFailure = err as Error
      const detail = err instanceof IngestError ? { status: err.status, code: err.code, error: err.message } : { err: errInfo(err) }
      this.ctx!.log.warn({ ...detail, retryInMs: delay }, `tower ${what} failed; retrying later`)
      await this.saveReport({ lastError: errorRecord(err), ...(retryable ? { unreachable: true } : {}) })
    }
  }

  /** Runs a step whose failure must not hold up the rest; reachability and auth errors still stop the cycle. */
  private async optional(what: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn()
    } catch (err) {
      if (err instanceof AbortedError) throw err
      if (err instanceof IngestError && (err.retryable || endsTheCycle(err))) throw err
      this.ctx!.log.warn({ err: errInfo(err) }, `tower ${what} failed`)
      await this.saveReport({ lastError: errorRecord(err) })
    }
  }

  // The parts ------------------------------------------------------------------------------

  /** Forgets everything tied to the previous tower or identity (the outbox replays from the start for the new one). */
  private async forgetTower(): Promise<void> {
    this.live.close('tower changed')
    const patch: Partial<TowerStateData> = {}
    for (const key of perTowerKeys) (patch as Record<string, undefined>)[key] = undefined
    await this.store!.save(patch)
    this.lastHeartbeat = 0
    this.lastSyncCheck = 0
  }

  private async heartbeat(http: IngestHttp, apiKey: string): Promise<void> {
    this.lastHeartbeat = Date.now()
    const directives = await sendHeartbeat(this.reporter, http, apiKey, { startedAt: this.startedAt, degraded: this.degraded })
    await this.directives.apply(directives)
  }

  /** True while the live channel is open (for tests and status pages). */
  get liveOpen(): boolean {
    return this.live.isOpen
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
    if (isCredentialLost(err)) {
      // docs/ingest-protocol.md: a 401 means the key is lost (the reference tower answers a revoked
      // instance so). Back to enrolling; in enforce mode the API is gated until the tower approves again.
      ctx.log.warn({ code: err.code }, 'the tower refused the instance key; enrolling again')
      this.live.close('instance key refused')
      await this.enrollment.credentialLost(e)
      await this.saveReport({ lastError, unreachable: false })
      return this.retryIn(this.backoff.next(), false)
    }
    switch (err.code) {
      case 'enrollment_rejected':
      case 'enrollment_revoked': {
        const state = err.code === 'enrollment_rejected' ? 'rejected' : 'revoked'
        ctx.log.warn({ state }, 'the tower refused this instance')
        this.live.close(`enrollment ${state}`)
        await this.enrollment.refused(url!, e, state)
        await this.saveReport({ lastError, unreachable: false })
        return { delay: this.options.refreshMs, retryable: false }
      }
      case 'enrollment_not_found':
        await this.enrollment.forgotten(e)
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
