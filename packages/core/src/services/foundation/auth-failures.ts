/**
 * Failed authentications per client address, in a fixed window, in this process's memory. Only
 * failures are counted: a request with a valid key costs one map lookup and is never delayed.
 *
 * Not @fastify/rate-limit: it counts every request (there is no "failures only" mode), so it would
 * throttle busy valid keys, and its 429 comes before the key is known. What is needed here is a few
 * lines: a counter per address, bounded in size, forgotten when its window ends.
 */
export interface AuthFailureLimitOptions {
  /** Failures allowed per address within one window; the next request answers 429. Default 30. */
  max?: number
  /** The window, in seconds. Default 60. */
  windowSec?: number
  /** Addresses tracked at most; the oldest are forgotten first. Default 10,000. */
  maxTracked?: number
}

export class AuthFailureLimiter {
  readonly max: number
  private readonly windowMs: number
  private readonly maxTracked: number
  /** Insertion order is window-start order (an entry is re-inserted when its window restarts). */
  private readonly windows = new Map<string, { count: number; resetAt: number }>()

  constructor(
    options: AuthFailureLimitOptions,
    private readonly now: () => number,
  ) {
    this.max = options.max ?? 30
    this.windowMs = (options.windowSec ?? 60) * 1000
    this.maxTracked = options.maxTracked ?? 10_000
    if (!Number.isInteger(this.max) || this.max < 1) throw new TypeError('authFailureLimit.max must be a positive integer')
    if (!(this.windowMs >= 1000)) throw new TypeError('authFailureLimit.windowSec must be at least 1')
  }

  /** Seconds until `address` may try again (for Retry-After), or 0 when it is not limited. */
  blockedFor(address: string): number {
    const entry = this.windows.get(address)
    if (!entry) return 0
    const left = entry.resetAt - this.now()
    if (left <= 0) {
      this.windows.delete(address)
      return 0
    }
    return entry.count >= this.max ? Math.ceil(left / 1000) : 0
  }

  /** Counts one failed authentication from `address`. */
  fail(address: string): void {
    const now = this.now()
    const entry = this.windows.get(address)
    if (entry && entry.resetAt > now) {
      entry.count++
      return
    }
    this.windows.delete(address)
    this.windows.set(address, { count: 1, resetAt: now + this.windowMs })
    // Bounded: the oldest windows go first (many addresses cannot grow memory without limit).
    while (this.windows.size > this.maxTracked) this.windows.delete(this.windows.keys().next().value!)
  }
}
