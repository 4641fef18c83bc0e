import { detached } from '../foundation/detached.js'
import { isSlawError } from '../../errors.js'
import type { Job } from '../../records.js'
import type { ServiceContext } from '../foundation/context.js'
import { uuidv7 } from '../foundation/ids.js'

/** What a handler gets besides its job. */
export interface JobControl {
  /** Aborted when this node lost the job's lease (another node may take it over) or stops. */
  readonly signal: AbortSignal
}

export type JobHandler = (job: Job, control: JobControl) => Promise<Record<string, unknown> | null>

/**
 * Thrown by a handler that cannot run its job yet (e.g. a concurrency cap is full): the job goes
 * back to the queue for `until` and the attempt does not count.
 */
export class JobDeferred extends Error {
  constructor(readonly until: Date) {
    super('job deferred')
    this.name = 'JobDeferred'
  }
}

/**
 * Thrown by a handler for a job that can never succeed (its payload is wrong): it fails at once,
 * without the retries a passing fault (a lost connection, a timeout) gets. A SlawError counts the same.
 */
export class JobRejected extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'JobRejected'
  }
}

export interface JobRunnerOptions {
  /** How often an idle node looks for due jobs. Default 1 s. */
  pollIntervalMs?: number
  /** How long a claimed job is ours before another node may take it over; renewed every third of it while the job runs. Default 60 s. */
  leaseMs?: number
  /** Jobs run at once on this node. Default 4. */
  concurrency?: number
  /** First retry delay of a failed job; doubles each attempt (with jitter). Default 1 s. */
  backoffBaseMs?: number
  /** Longest retry delay. Default 5 minutes. */
  backoffMaxMs?: number
}

/**
 * Background jobs live in storage, not in timers: a node claims due jobs (FOR UPDATE SKIP LOCKED:
 * one claimant across nodes), runs them while renewing its lease, and records the outcome. A failed
 * job is retried with exponential backoff up to its `maxAttempts`; a node that dies mid-job stops
 * renewing, its lease runs out and another node claims the job again. Time comes from `ctx.now()`,
 * so a test drives leases and backoff with a fake clock.
 */
export class JobRunner {
  private readonly handlers = new Map<string, JobHandler>()
  /** This node's identity in job leases and run records. */
  readonly nodeId = `node-${uuidv7()}`
  private timer: NodeJS.Timeout | undefined
  /** When `timer` fires (performance.now() time). */
  private timerDue = 0
  private running = 0
  private stopped = true
  private kicked = false
  private readonly inFlight = new Set<Promise<void>>()
  private lastClaimError: string | undefined
  private readonly controllers = new Set<AbortController>()
  private ticking: Promise<void> | undefined
  readonly pollIntervalMs: number
  readonly leaseMs: number
  private readonly concurrency: number
  private readonly backoffBaseMs: number
  private readonly backoffMaxMs: number

  constructor(
    private readonly ctx: ServiceContext,
    options: JobRunnerOptions = {},
  ) {
    this.pollIntervalMs = options.pollIntervalMs ?? 1_000
    this.leaseMs = options.leaseMs ?? 60_000
    this.concurrency = options.concurrency ?? 4
    this.backoffBaseMs = options.backoffBaseMs ?? 1_000
    this.backoffMaxMs = options.backoffMaxMs ?? 5 * 60_000
  }

  /** For `GET /api/health`: degraded while stopped or while claiming jobs fails. */
  health(): { status: 'ok' | 'degraded'; reason?: string; running: number } {
    if (this.stopped) return { status: 'degraded', reason: 'the job runner is not running on this node', running: this.running }
    if (this.lastClaimError) return { status: 'degraded', reason: `claiming jobs failed: ${this.lastClaimError}`, running: this.running }
    return { status: 'ok', running: this.running }
  }

  register(kind: string, handler: JobHandler): void {
    this.handlers.set(kind, handler)
  }

  /**
   * A job that repeats every `intervalMs`, kept in the queue like any other: each slot (a multiple
   * of the interval) is one job with the slot as its dedupe key, so nodes starting together or
   * finishing together never schedule a slot twice.
   */
  every(kind: string, intervalMs: number, handler: (job: Job, control: JobControl) => Promise<Record<string, unknown> | null>): void {
    this.recurring.set(kind, intervalMs)
    this.register(kind, async (job, control) => {
      try {
        return await handler(job, control)
      } finally {
        await this.enqueueSlot(kind, intervalMs)
      }
    })
  }

  private readonly recurring = new Map<string, number>()

  private async enqueueSlot(kind: string, intervalMs: number): Promise<void> {
    const slot = (Math.floor(this.ctx.now().getTime() / intervalMs) + 1) * intervalMs
    await this.ctx.storage.jobs.enqueue({ id: uuidv7(), kind, squadId: null, payload: {}, runAt: new Date(slot), dedupeKey: `slot:${slot}`, maxAttempts: 1 })
  }

  /** Makes sure every recurring job has its next slot queued (called at start). */
  async scheduleRecurring(): Promise<void> {
    for (const [kind, intervalMs] of this.recurring) await this.enqueueSlot(kind, intervalMs)
  }

  start(): void {
    if (!this.stopped) return
    this.stopped = false
    void this.scheduleRecurring().catch((err) => this.ctx.log.warn({ err }, 'scheduling recurring jobs failed'))
    this.schedule(0)
  }

  /** Looks for work now (after a commit that enqueued some). */
  kick(): void {
    if (this.stopped) return
    if (this.running >= this.concurrency) {
      this.kicked = true
      return
    }
    this.schedule(0)
  }

  /**
   * Claims and runs due jobs until none is left, and waits for them: the explicit trigger tests and
   * hosts without a polling runner use. Returns how many jobs ran.
   */
  async drain(maxRounds = 1_000): Promise<number> {
    let total = 0
    for (let round = 0; round < maxRounds; round++) {
      const jobs = await this.claim(this.concurrency)
      if (!jobs.length) break
      total += jobs.length
      await Promise.allSettled(jobs.map((job) => this.run(job)))
    }
    return total
  }

  /** Stops claiming, aborts what runs (its handlers see `signal`), then waits for it. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    await this.ticking
    for (const c of this.controllers) c.abort(new Error('the node is shutting down'))
    await Promise.allSettled([...this.inFlight])
  }

  /**
   * Plans the next look for work in `ms`, unless one is planned sooner already: a tick that ends
   * while a kick's look is pending must not push that look back to the poll interval (the kick's
   * job would wait for the next poll, an hour where a host polls hourly).
   */
  private schedule(ms: number): void {
    const due = performance.now() + ms
    if (this.timer && this.timerDue <= due) return
    if (this.timer) clearTimeout(this.timer)
    this.timerDue = due
    // Detached: kick() is often called inside a request's transaction, whose context a timer would inherit.
    this.timer = setTimeout(
      detached(() => {
        this.timer = undefined
        this.ticking = this.tick().finally(() => (this.ticking = undefined))
      }),
      ms,
    )
    this.timer.unref()
  }

  private async claim(limit: number): Promise<Job[]> {
    if (limit < 1 || !this.handlers.size) return []
    return this.ctx.storage.jobs.claim([...this.handlers.keys()], this.nodeId, this.leaseMs, limit, this.ctx.now())
  }

  private async tick(): Promise<void> {
    if (this.stopped) return
    try {
      const jobs = await this.claim(this.concurrency - this.running)
      this.lastClaimError = undefined
      for (const job of jobs) void this.run(job)
      // A full claim means more may be due: look again at once.
      if (jobs.length && jobs.length === this.concurrency) this.kicked = true
    } catch (err) {
      this.lastClaimError = err instanceof Error ? err.message : String(err)
      this.ctx.log.warn({ err }, 'job claim failed')
    }
    if (!this.stopped) this.schedule(this.pollIntervalMs)
  }

  private run(job: Job): Promise<void> {
    this.running++
    const controller = new AbortController()
    this.controllers.add(controller)
    // The lease heartbeat: a third of the lease, so two missed renewals still leave time.
    const heartbeat = setInterval(
      detached(() => {
        this.ctx.storage.jobs
          .renew(job.id, this.nodeId, this.leaseMs, this.ctx.now())
          .then((held) => {
            if (!held) controller.abort(new Error('the job lease was lost'))
          })
          .catch((err) => this.ctx.log.warn({ err, jobId: job.id }, 'job lease renewal failed'))
      }),
      Math.max(10, Math.floor(this.leaseMs / 3)),
    )
    heartbeat.unref()
    const p = (async () => {
      const handler = this.handlers.get(job.kind)!
      try {
        if (job.attempts > job.maxAttempts) {
          // Claimed again after its last attempt's lease ran out: the node running it died each time.
          await this.ctx.storage.jobs.fail(job.id, this.nodeId, `gave up after ${job.maxAttempts} attempts (last: ${job.error ?? 'lease expired'})`)
          return
        }
        const result = await handler(job, { signal: controller.signal })
        await this.complete(job.id, result)
      } catch (err) {
        if (err instanceof JobDeferred) {
          await this.ctx.storage.jobs.defer(job.id, this.nodeId, err.until).catch(() => undefined)
          return
        }
        const message = err instanceof Error ? err.message : String(err)
        const permanent = err instanceof JobRejected || isSlawError(err)
        const retryAt = !permanent && job.attempts < job.maxAttempts ? new Date(this.ctx.now().getTime() + this.backoff(job.attempts)) : null
        this.ctx.log.warn({ err, jobId: job.id, kind: job.kind, attempt: job.attempts, retryAt }, 'job failed')
        await this.ctx.storage.jobs.fail(job.id, this.nodeId, message, retryAt).catch(() => undefined)
      } finally {
        clearInterval(heartbeat)
        this.controllers.delete(controller)
        this.running--
        if (this.kicked) {
          this.kicked = false
          this.kick()
        }
      }
    })()
    this.inFlight.add(p)
    void p.finally(() => this.inFlight.delete(p))
    return p
  }

  private pending: Array<{ id: string; result: Record<string, unknown> | null; done: (err?: unknown) => void }> = []

  /**
   * Completions are written in batches: every job that finishes in the same turn of the event loop
   * is completed by one statement (the queue's hot path is one claim per batch plus this).
   */
  private complete(id: string, result: Record<string, unknown> | null): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ id, result, done: (err) => (err ? reject(err) : resolve()) })
      if (this.pending.length === 1) setImmediate(detached(() => void this.flush()))
    })
  }

  private async flush(): Promise<void> {
    const batch = this.pending
    this.pending = []
    try {
      await this.ctx.storage.jobs.completeMany(
        this.nodeId,
        batch.map(({ id, result }) => ({ id, result })),
      )
      for (const b of batch) b.done()
    } catch (err) {
      for (const b of batch) b.done(err)
    }
  }

  /** Exponential backoff with full jitter in the upper half: base·2^(attempt-1), capped. */
  backoff(attempt: number): number {
    const ceiling = Math.min(this.backoffMaxMs, this.backoffBaseMs * 2 ** Math.max(0, attempt - 1))
    return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2)
  }
}
