import type { Job } from '../records.js'
import type { ServiceContext } from './context.js'
import { uuidv7 } from './ids.js'

export type JobHandler = (job: Job) => Promise<Record<string, unknown> | null>

export interface JobRunnerOptions {
  /** How often an idle node looks for due jobs. */
  pollIntervalMs?: number
  /** How long a claimed job is ours before another node may take it over. */
  leaseMs?: number
  concurrency?: number
}

/**
 * Background jobs live in storage, not in timers: a node claims due jobs (storage guarantees one
 * claimant across nodes), runs them, and records the outcome. A node that dies mid-job loses its
 * lease and another node picks the job up.
 */
export class JobRunner {
  private readonly handlers = new Map<string, JobHandler>()
  private readonly workerId = `worker-${uuidv7()}`
  private timer: NodeJS.Timeout | undefined
  private running = 0
  private stopped = true
  private kicked = false
  private readonly inFlight = new Set<Promise<void>>()
  private lastClaimError: string | undefined
  private ticking: Promise<void> | undefined
  private readonly pollIntervalMs: number
  private readonly leaseMs: number
  private readonly concurrency: number

  constructor(
    private readonly ctx: ServiceContext,
    options: JobRunnerOptions = {},
  ) {
    this.pollIntervalMs = options.pollIntervalMs ?? 1_000
    this.leaseMs = options.leaseMs ?? 60_000
    this.concurrency = options.concurrency ?? 2
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

  start(): void {
    if (!this.stopped) return
    this.stopped = false
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

  /** Stops claiming, then waits for a claim under way and every job it started. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    await this.ticking
    await Promise.allSettled([...this.inFlight])
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => (this.ticking = undefined))
    }, ms)
    this.timer.unref()
  }

  private async tick(): Promise<void> {
    if (this.stopped) return
    const free = this.concurrency - this.running
    if (free > 0 && this.handlers.size) {
      try {
        const jobs = await this.ctx.storage.jobs.claim([...this.handlers.keys()], this.workerId, this.leaseMs, free)
        this.lastClaimError = undefined
        for (const job of jobs) this.run(job)
      } catch (err) {
        this.lastClaimError = err instanceof Error ? err.message : String(err)
        this.ctx.log.warn({ err }, 'job claim failed')
      }
    }
    if (!this.stopped) this.schedule(this.pollIntervalMs)
  }

  private run(job: Job): void {
    this.running++
    const p = (async () => {
      const handler = this.handlers.get(job.kind)!
      try {
        const result = await handler(job)
        await this.ctx.storage.jobs.complete(job.id, this.workerId, result)
      } catch (err) {
        this.ctx.log.warn({ err, jobId: job.id, kind: job.kind }, 'job failed')
        await this.ctx.storage.jobs.fail(job.id, this.workerId, err instanceof Error ? err.message : String(err)).catch(() => undefined)
      } finally {
        this.running--
        if (this.kicked) {
          this.kicked = false
          this.kick()
        }
      }
    })()
    this.inFlight.add(p)
    void p.finally(() => this.inFlight.delete(p))
  }
}
