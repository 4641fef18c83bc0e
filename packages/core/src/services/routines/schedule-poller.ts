import type { ServiceContext } from '../foundation/context.js'
import type { RoutineService } from './routines.js'

export interface RoutineSchedulerOptions {
  /** How often this node looks for due schedules. Default 1000 ms. */
  intervalMs?: number
  /** Schedules claimed per transaction. Default 100. */
  batchSize?: number
}

/**
 * Polls storage for due schedules. The timer holds no state: due times live in storage
 * (routine_triggers.next_fire_at), claims skip rows another node holds, and the runs they produce
 * are jobs. Any number of nodes may run it; a node that stops loses nothing.
 */
export class RoutineScheduler {
  private timer: NodeJS.Timeout | undefined
  private ticking: Promise<void> | undefined
  private stopped = true
  private readonly intervalMs: number
  private readonly batchSize: number

  constructor(
    private readonly ctx: ServiceContext,
    private readonly routines: RoutineService,
    options: RoutineSchedulerOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 1_000
    this.batchSize = options.batchSize ?? 100
  }

  start(): void {
    if (!this.stopped) return
    this.stopped = false
    this.schedule(0)
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    await this.ticking
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => {
        this.ticking = undefined
        if (!this.stopped) this.schedule(this.intervalMs)
      })
    }, ms)
    this.timer.unref()
  }

  private async tick(): Promise<void> {
    if (this.stopped) return
    try {
      await this.routines.tickSchedules(this.ctx.now(), this.batchSize)
    } catch (err) {
      this.ctx.log.warn({ err }, 'routine schedule tick failed')
    }
  }
}
