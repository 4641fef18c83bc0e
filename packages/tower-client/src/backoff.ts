/**
 * Retry timing for 429, 5xx and network errors (docs/ingest-protocol.md): exponential from `baseMs`
 * (1 s) doubling up to `maxMs` (5 min), with jitter so a fleet that lost its tower together does
 * not come back in lockstep. A `Retry-After` from the tower is a floor: never retry sooner.
 */
export class Backoff {
  private attempts = 0

  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  get failures(): number {
    return this.attempts
  }

  /** The delay before the next try after one more failure. */
  next(retryAfterMs?: number): number {
    this.attempts++
    const ceiling = Math.min(this.maxMs, this.baseMs * 2 ** Math.min(this.attempts - 1, 30))
    // Equal jitter: at least half the step, so the backoff still grows.
    const delay = ceiling / 2 + this.random() * (ceiling / 2)
    return Math.round(retryAfterMs !== undefined ? Math.max(delay, retryAfterMs) : delay)
  }

  /** The longest delay, for states that wait on a human (a tower that refuses our protocol). */
  longest(): number {
    return this.maxMs
  }

  reset(): void {
    this.attempts = 0
  }
}

/** `Retry-After` in seconds or as an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined
  const trimmed = value.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000)
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/**
 * When one step (sync, a skill pull) may run again after failures: its own backoff, so a step that
 * keeps failing never delays another (heartbeats above all). An explicit trigger runs it at once.
 */
export class RetryGate {
  private retryAt = 0

  constructor(private readonly backoff: Backoff) {}

  ready(now: number, forced: boolean): boolean {
    return forced || now >= this.retryAt
  }

  /** The step failed last time it ran (and has not succeeded since). */
  get failing(): boolean {
    return this.retryAt > 0
  }

  /** Milliseconds until the step may run again (0 when it may now). */
  waitMs(now: number): number {
    return Math.max(0, this.retryAt - now)
  }

  succeeded(): void {
    this.backoff.reset()
    this.retryAt = 0
  }

  /** Records one more failure; returns the delay before the next try. */
  failed(now: number, retryAfterMs?: number): number {
    const delay = this.backoff.next(retryAfterMs)
    this.retryAt = now + delay
    return delay
  }
}
