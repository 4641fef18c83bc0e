/**
 * LockProvider: serialises a critical section across every node that shares the provider.
 *
 * `withLock(key, ttlMs, fn)` runs `fn` while holding `key`. The lock expires after `ttlMs` even if
 * its holder dies, so work goes on; because of that, a lock is a serialiser, not the last line of
 * defence: the storage's conditional updates are. Implementations throw `LockUnavailableError` when
 * the lock cannot be had in time or the backing service is unreachable.
 *
 * Prove an implementation with `lockContract` from `@slaw/core/testing`.
 */
export interface LockProvider {
  readonly name: string
  withLock<T>(key: string, ttlMs: number, fn: () => Promise<T>): Promise<T>
  /**
   * Optional: a cheap round trip to the backing service, for `GET /api/health`; throws when it is
   * unreachable. A provider without one (in-process locks) is always healthy.
   */
  ping?(): Promise<void>
  close(): Promise<void>
}

export class LockUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'LockUnavailableError'
  }
}
