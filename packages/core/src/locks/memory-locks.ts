import type { LockProvider } from '../contracts/lock-provider.js'
import { LockUnavailableError } from '../contracts/lock-provider.js'

export interface MemoryLocksOptions {
  /** How long a caller waits for a held lock before LockUnavailableError. Default 10 s. */
  acquireTimeoutMs?: number
}

/**
 * In-process locks: a FIFO queue per key. Correct for one node only; use `@slaw/lock-redis` when
 * several nodes share a database. A holder that outlives `ttlMs` loses the lock, as with Redis.
 */
export function memoryLocks(options: MemoryLocksOptions = {}): LockProvider {
  const acquireTimeoutMs = options.acquireTimeoutMs ?? 10_000
  const tails = new Map<string, Promise<void>>()

  return {
    name: 'memory',
    async withLock<T>(key: string, ttlMs: number, fn: () => Promise<T>): Promise<T> {
      const previous = tails.get(key) ?? Promise.resolve()
      let release!: () => void
      const mine = new Promise<void>((resolve) => (release = resolve))
      const tail = previous.then(() => mine)
      tails.set(key, tail)
      let timer: NodeJS.Timeout | undefined
      const waited = await Promise.race([previous.then(() => true), new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), acquireTimeoutMs)))])
      clearTimeout(timer)
      if (!waited) {
        // Leave the queue in order: our slot resolves as soon as the one before us does.
        void previous.then(release)
        throw new LockUnavailableError(`lock ${key} not acquired within ${acquireTimeoutMs} ms`)
      }
      const expiry = setTimeout(release, ttlMs)
      expiry.unref()
      try {
        return await fn()
      } finally {
        clearTimeout(expiry)
        release()
        if (tails.get(key) === tail) tails.delete(key)
      }
    },
    async close() {
      tails.clear()
    },
  } satisfies LockProvider
}
