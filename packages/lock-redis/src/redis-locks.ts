import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { LockUnavailableError, type LockProvider } from '@slaw/core'
import { compareAndDelete, compareAndExpire, runScript } from './scripts.js'

export interface RedisLocksOptions {
  /**
   * Where Redis is, for a client this provider creates (and closes), e.g. `redis://:secret@host:6379/0`
   * or `rediss://…` for TLS. Give either `url` or `client`. Default `redis://127.0.0.1:6379`.
   */
  url?: string
  /**
   * A client the caller owns: used as it is and never closed by `close()`. Its own settings stay in
   * force; create it with `enableOfflineQueue: false` so that commands fail at once while Redis is
   * away (every command is bounded by `commandTimeoutMs` regardless).
   */
  client?: Redis
  /** Prefix of every lock key in Redis. Default `'slaw:lock:'`. */
  keyPrefix?: string
  /** How long `withLock` tries to take a held lock before `LockUnavailableError`. Default 10 000 ms. */
  acquireTimeoutMs?: number
  /**
   * The pause between two attempts on a held lock, drawn at random between `min` and `max` so that
   * waiters do not retry in step. Default `{ min: 20, max: 100 }` ms.
   */
  retryDelayMs?: { min: number; max: number }
  /**
   * How long `withLock` waits for a connection, the first one or a new one after Redis went away,
   * before `LockUnavailableError`. Also the connect timeout of a client this provider creates.
   * Default 1 000 ms.
   */
  connectTimeoutMs?: number
  /** How long one Redis command may take before `LockUnavailableError`. Default 1 000 ms. */
  commandTimeoutMs?: number
}

const defaultUrl = 'redis://127.0.0.1:6379'

/**
 * Locks for several nodes sharing one Redis. A lock is a key set with `SET key token NX PX ttl`, owned
 * by a random token: only its owner extends it or deletes it (compare-and-pexpire,
 * compare-and-delete, in Lua). A waiter retries with random jitter until `acquireTimeoutMs`.
 *
 * While `fn` runs, a watchdog extends the lock by `ttlMs` every third of `ttlMs`, so a live holder
 * keeps it however long `fn` takes, and the lock of a holder whose process died (or lost Redis)
 * expires `ttlMs` after its last extension. `fn`'s result comes back even if releasing the lock
 * failed: the lock then expires by itself.
 *
 * When Redis is unreachable or fails, `withLock` throws `LockUnavailableError` within about
 * `connectTimeoutMs` or `commandTimeoutMs`, so an HTTP layer can answer 503.
 *
 * @example
 * ```ts
 * const instance = await createInstance({ storage, locks: redisLocks({ url: process.env.REDIS_URL }) })
 * ```
 */
export function redisLocks(options: RedisLocksOptions = {}): LockProvider {
  if (options.url !== undefined && options.client !== undefined) {
    throw new TypeError('redisLocks: give url or client, not both')
  }
  const keyPrefix = options.keyPrefix ?? 'slaw:lock:'
  const acquireTimeoutMs = nonNegative('acquireTimeoutMs', options.acquireTimeoutMs ?? 10_000)
  const connectTimeoutMs = positive('connectTimeoutMs', options.connectTimeoutMs ?? 1_000)
  const commandTimeoutMs = positive('commandTimeoutMs', options.commandTimeoutMs ?? 1_000)
  const retryMin = nonNegative('retryDelayMs.min', options.retryDelayMs?.min ?? 20)
  const retryMax = nonNegative('retryDelayMs.max', options.retryDelayMs?.max ?? 100)
  if (retryMax < retryMin) throw new RangeError('redisLocks: retryDelayMs.max is below retryDelayMs.min')

  const owned = options.client === undefined
  const client =
    options.client ??
    new Redis(options.url ?? defaultUrl, {
      // Connect on first use, so that building the provider does no I/O.
      lazyConnect: true,
      // Fail at once while disconnected, instead of queueing commands until Redis is back.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: connectTimeoutMs,
      commandTimeout: commandTimeoutMs,
    })
  let lastError: Error | undefined
  // An owned client's errors surface through withLock; without a listener ioredis would log each one.
  if (owned) client.on('error', (err: Error) => (lastError = err))

  let closed = false
  const watchdogs = new Set<Watchdog>()
  let readyWaiter: Promise<void> | undefined
  // A function, so that TypeScript does not narrow the status across awaits.
  const status = () => client.status

  /** Resolves when the client is ready, or throws LockUnavailableError after waiting at most `waitMs`. */
  async function ready(waitMs: number): Promise<void> {
    if (closed) throw new LockUnavailableError('redis locks are closed')
    if (client.status === 'ready') return
    if (client.status === 'wait') client.connect().catch(() => {}) // errors reach 'error' and lastError
    if (client.status !== 'end') {
      // One listener however many callers wait.
      readyWaiter ??= new Promise<void>((resolve) =>
        client.once('ready', () => {
          readyWaiter = undefined
          resolve()
        }),
      )
      await withTimeout(readyWaiter, Math.min(connectTimeoutMs, Math.max(waitMs, 0)))
    }
    if (closed) throw new LockUnavailableError('redis locks are closed')
    if (status() !== 'ready') {
      const why = lastError ? `: ${lastError.message}` : ''
      throw new LockUnavailableError(`redis is not reachable (connection ${status()})${why}`, {
        cause: lastError,
      })
    }
  }

  /** One Redis command, bounded in time; any failure becomes LockUnavailableError. */
  async function command<T>(what: string, run: () => Promise<T>): Promise<T> {
    let pending: Promise<T>
    try {
      pending = run()
    } catch (err) {
      pending = Promise.reject(err)
    }
    pending.catch(() => {}) // it may fail after the timeout has answered
    try {
      const answer = await withTimeout(pending, commandTimeoutMs)
      if (answer === timedOut) throw new Error(`no answer within ${commandTimeoutMs} ms`)
      return answer
    } catch (err) {
      throw new LockUnavailableError(`redis ${what} failed: ${messageOf(err)}`, { cause: err })
    }
  }

  async function acquire(key: string, redisKey: string, token: string, ttlMs: number): Promise<void> {
    const deadline = Date.now() + acquireTimeoutMs
    for (;;) {
      await ready(deadline - Date.now())
      const reply = await command('SET NX', () => client.set(redisKey, token, 'PX', ttlMs, 'NX'))
      if (reply === 'OK') return
      const left = deadline - Date.now()
      if (left <= 0) throw new LockUnavailableError(`lock ${key} not acquired within ${acquireTimeoutMs} ms`)
      await sleep(Math.min(retryMin + Math.random() * (retryMax - retryMin), left))
    }
  }

  /** Extends the lock every third of its ttl while its owner runs; stops when told or when the lock is lost. */
  function watch(redisKey: string, token: string, ttlMs: number): Watchdog {
    let timer: NodeJS.Timeout | undefined
    const watchdog: Watchdog = {
      stop() {
        clearTimeout(timer)
        timer = undefined
        watchdogs.delete(watchdog)
      },
    }
    const schedule = () => {
      timer = setTimeout(extend, Math.max(Math.floor(ttlMs / 3), 1))
      // A hung fn must not keep the process alive through its watchdog.
      timer.unref()
    }
    const extend = async () => {
      try {
        const extended = await command('extend', () => runScript(client, compareAndExpire, [redisKey], [token, ttlMs]))
        // 0: the lock expired (and may be someone else's now); there is nothing left to extend.
        if (extended !== 1) return watchdog.stop()
      } catch {
        // Redis is away: try again next time; if it stays away, the lock expires with its ttl.
      }
      if (watchdogs.has(watchdog)) schedule()
    }
    watchdogs.add(watchdog)
    schedule()
    return watchdog
  }

  return {
    name: 'redis',
    async withLock<T>(key: string, ttlMs: number, fn: () => Promise<T>): Promise<T> {
      if (!(Number.isFinite(ttlMs) && ttlMs > 0)) throw new RangeError(`ttlMs must be a positive number, got ${ttlMs}`)
      const ttl = Math.ceil(ttlMs)
      const redisKey = keyPrefix + key
      const token = randomUUID()
      await acquire(key, redisKey, token, ttl)
      const watchdog = watch(redisKey, token, ttl)
      try {
        return await fn()
      } finally {
        watchdog.stop()
        // Best effort: if Redis is away, the lock expires with its ttl; fn's outcome stands.
        await command('release', () => runScript(client, compareAndDelete, [redisKey], [token])).catch(() => {})
      }
    },
    async ping() {
      await ready(connectTimeoutMs)
      await command('PING', () => client.ping())
    },
    async close() {
      if (closed) return
      closed = true
      for (const watchdog of watchdogs) watchdog.stop()
      if (!owned) return
      if (client.status === 'ready') {
        try {
          if ((await withTimeout(client.quit(), commandTimeoutMs)) !== timedOut) return
        } catch {
          // fall through: drop the connection
        }
      }
      client.disconnect()
    },
  } satisfies LockProvider
}

interface Watchdog {
  stop(): void
}

const timedOut = Symbol('timed out')

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | typeof timedOut> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([promise, new Promise<typeof timedOut>((resolve) => (timer = setTimeout(() => resolve(timedOut), ms)))])
  } finally {
    clearTimeout(timer)
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

function positive(name: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0)) throw new RangeError(`redisLocks: ${name} must be a positive number`)
  return value
}

function nonNegative(name: string, value: number): number {
  if (!(Number.isFinite(value) && value >= 0)) throw new RangeError(`redisLocks: ${name} must be a number >= 0`)
  return value
}
