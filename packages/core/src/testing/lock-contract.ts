import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LockProvider } from '../contracts/lock-provider.js'
import { LockUnavailableError } from '../contracts/lock-provider.js'
import { gate, settle, within, type Settled, type Within } from './async-helpers.js'
import type { ContractTest } from './contract-test.js'

/** What the kit asks of a provider it makes. A provider must honour every field that is set. */
export interface LockContractSettings {
  /**
   * Give up acquiring after this many ms with `LockUnavailableError`. Set only by the test of
   * acquisition timeouts (to a few hundred ms); unset, the provider keeps its own default.
   */
  acquireTimeoutMs?: number
}

/**
 * Makes a fresh provider. Several providers made by one `makeLocks` stand for several nodes.
 * The kit closes every provider it makes.
 */
export type MakeLocks = (settings: LockContractSettings) => Promise<LockProvider> | LockProvider

export interface LockContractOptions {
  /**
   * Two providers made by `makeLocks` exclude each other, as nodes sharing one backend do
   * (Redis: true). When false (in-process locks), the tests that need two nodes are skipped.
   * With two nodes, the kit also plays a node's death by closing its provider while `fn` still
   * runs: the lock it held must be free again within about `ttlMs`. Default false.
   */
  sharedAcrossInstances?: boolean
  /**
   * The provider keeps a lock while `fn` still runs, extending it past `ttlMs` (a watchdog), so only
   * a dead holder's lock expires (Redis: true). When false, a lock expires `ttlMs` after it was
   * taken even if `fn` still runs (in-process). Default false.
   */
  extendsWhileRunning?: boolean
  /** The ttl of the expiry tests, in ms. Raise it for a backend with coarse expiry. Default 400. */
  ttlMs?: number
  /** How many callers race for one key in the exclusion tests. Default 25. */
  concurrency?: number
}

/** A ttl long enough that no test outlives it: locks taken with it are only ever released. */
const longTtlMs = 60_000
/** How long a lock that is free may take to be had. */
const promptlyMs = 3_000

/**
 * The contract every `LockProvider` keeps. Run it from the provider's own tests:
 *
 * ```ts
 * import t from 'tap'
 * import { lockContract } from '@slaw/core/testing'
 * lockContract(t, (settings) => myLocks({ url, ...settings }), { sharedAcrossInstances: true })
 * ```
 *
 * It checks that one key admits one holder at a time (within a provider and, when
 * `sharedAcrossInstances`, across providers); that keys are independent; that `fn`'s result and
 * error come back and release the lock; that a lock outlives neither `ttlMs` (or, with
 * `extendsWhileRunning`, its holder) by long; and that a caller who cannot get the lock in time
 * gets `LockUnavailableError`.
 */
export async function lockContract(t: ContractTest, makeLocks: MakeLocks, options: LockContractOptions = {}): Promise<void> {
  const shared = options.sharedAcrossInstances ?? false
  const extendsWhileRunning = options.extendsWhileRunning ?? false
  const ttlMs = options.ttlMs ?? 400
  const concurrency = options.concurrency ?? 25
  const notShared = shared ? false : 'the provider is not shared across instances (sharedAcrossInstances: false)'
  const extending = extendsWhileRunning ? 'the provider extends a lock while its holder runs (extendsWhileRunning: true)' : false
  const notExtending = extendsWhileRunning ? false : 'the provider lets a lock expire while its holder runs (extendsWhileRunning: false)'

  await t.test('one key admits one holder at a time', {}, async (t) => {
    const locks = await providers(t, makeLocks)
    const p = await locks.make()
    const callers = Array.from({ length: concurrency }, () => p)
    await exclusion(t, key('exclusion'), callers)
  })

  await t.test('two instances exclude each other on one key', { skip: notShared }, async (t) => {
    const locks = await providers(t, makeLocks)
    const a = await locks.make()
    const b = await locks.make()
    const callers = Array.from({ length: concurrency }, (_, i) => (i % 2 ? a : b))
    await exclusion(t, key('instances'), callers)
  })

  await t.test('different keys do not block each other', {}, async (t) => {
    const locks = await providers(t, makeLocks)
    const p = await locks.make()
    const held = gate()
    const entered = gate()
    const first = p.withLock(key('first'), longTtlMs, async () => {
      entered.open()
      await held.promise
    })
    await entered.promise
    const second = await within(
      promptlyMs,
      p.withLock(key('second'), longTtlMs, async () => 'second'),
    )
    t.same(second, { value: 'second' }, 'a lock on another key is had while the first is held')
    held.open()
    t.same(await settle(first), { value: undefined }, 'the first holder finishes')
  })

  await t.test("fn's result comes back and the lock is released", {}, async (t) => {
    const locks = await providers(t, makeLocks)
    const p = await locks.make()
    const k = key('result')
    const result = await p.withLock(k, longTtlMs, async () => ({ answer: 42, list: ['a'] }))
    t.same(result, { answer: 42, list: ['a'] }, 'withLock resolves to what fn resolved to')
    const again = await within(
      promptlyMs,
      p.withLock(k, longTtlMs, async () => 'again'),
    )
    t.same(again, { value: 'again' }, 'the key is free again at once, long before its ttl')
  })

  await t.test("fn's error comes back and the lock is released", {}, async (t) => {
    const locks = await providers(t, makeLocks)
    const p = await locks.make()
    const k = key('error')
    const boom = new Error('boom')
    const failed = await settle(
      p.withLock(k, longTtlMs, async () => {
        throw boom
      }),
    )
    t.ok('error' in failed, 'withLock rejects when fn throws')
    t.equal('error' in failed ? failed.error : undefined, boom, 'with the very error fn threw')
    const again = await within(
      promptlyMs,
      p.withLock(k, longTtlMs, async () => 'again'),
    )
    t.same(again, { value: 'again' }, 'the key is free again at once, long before its ttl')
  })

  await t.test('a lock expires ttlMs after it was taken, even while fn runs', { skip: extending }, async (t) => {
    const locks = await providers(t, makeLocks)
    const p = await locks.make()
    const k = key('expiry')
    const stuck = gate()
    const holderIn = gate()
    const holder = p.withLock(k, ttlMs, async () => {
      holderIn.open()
      await stuck.promise
      return 'late'
    })
    await holderIn.promise
    const takenAt = Date.now()

    const waiterHolds = gate()
    const waiterIn = gate()
    let waiterInAt = 0
    const waiter = p.withLock(k, longTtlMs, async () => {
      waiterInAt = Date.now()
      waiterIn.open()
      await waiterHolds.promise
    })
    const gotIn = await within(ttlMs + promptlyMs, waiterIn.promise)
    t.ok('value' in gotIn, "a waiter gets the lock once the stuck holder's ttl has passed")
    const waitedMs = waiterInAt - takenAt
    t.ok(waiterInAt > 0 && waitedMs >= ttlMs * 0.9, `and not before the ttl (${waiterInAt ? waitedMs : '∞'} ms of ${ttlMs})`)

    stuck.open()
    t.same(await settle(holder), { value: 'late' }, "the expired holder still gets its fn's result")

    let thirdIn = false
    const third = p.withLock(k, longTtlMs, async () => {
      thirdIn = true
    })
    await sleep(Math.min(ttlMs, 300))
    t.equal(thirdIn, false, "the expired holder's finishing did not release the waiter's lock")
    waiterHolds.open()
    t.same(await within(promptlyMs, waiter), { value: undefined }, 'the waiter finishes')
    t.same(await within(promptlyMs, third), { value: undefined }, 'the next caller gets in once the waiter is done')
    t.ok(thirdIn, 'and runs its fn')
  })

  await t.test('a live holder keeps its lock past ttlMs', { skip: notExtending }, async (t) => {
    const locks = await providers(t, makeLocks)
    const p = await locks.make()
    const k = key('watchdog')
    const holderIn = gate()
    let holderDone = false
    const holder = p.withLock(k, ttlMs, async () => {
      holderIn.open()
      await sleep(ttlMs * 3)
      holderDone = true
    })
    await holderIn.promise
    let holderDoneWhenWaiterIn: boolean | undefined
    const waiter = p.withLock(k, longTtlMs, async () => {
      holderDoneWhenWaiterIn = holderDone
    })
    t.same(await within(ttlMs * 3 + promptlyMs, holder), { value: undefined }, 'the holder finishes')
    t.same(await within(promptlyMs, waiter), { value: undefined }, 'the waiter gets in after it')
    t.equal(holderDoneWhenWaiterIn, true, 'and not while the holder still ran, three ttls long')
  })

  await t.test("a dead holder's lock expires and another instance proceeds", { skip: notShared }, async (t) => {
    const locks = await providers(t, makeLocks)
    const a = await locks.make()
    const b = await locks.make()
    const k = key('dead-holder')
    const stuck = gate()
    const holderIn = gate()
    // The holder never finishes on its own: its instance is closed under it, as if its node died.
    const holder = a.withLock(k, ttlMs, async () => {
      holderIn.open()
      await stuck.promise
    })
    t.teardown(() => stuck.open())
    await holderIn.promise

    const waiterIn = gate()
    let waiterInAt = 0
    const waiter = b.withLock(k, longTtlMs, async () => {
      waiterInAt = Date.now()
      waiterIn.open()
    })
    if (extendsWhileRunning) {
      const early = await within(ttlMs * 2, waiterIn.promise)
      t.ok('timedOut' in early, 'no other instance gets the lock while its holder lives, two ttls long')
    }
    await locks.close(a)
    const diedAt = Date.now()
    const gotIn = await within(ttlMs + promptlyMs, waiterIn.promise)
    const afterMs = waiterInAt ? waiterInAt - diedAt : '∞'
    t.ok('value' in gotIn, `another instance gets the lock once the dead holder's ttl has passed (${afterMs} ms on)`)
    t.same(await within(promptlyMs, waiter), { value: undefined }, 'and finishes')
    stuck.open()
    await settle(holder)
  })

  await t.test('LockUnavailableError when the lock is not had within acquireTimeoutMs', {}, async (t) => {
    const locks = await providers(t, makeLocks)
    const acquireTimeoutMs = 250
    const p = await locks.make({ acquireTimeoutMs })
    const k = key('timeout')
    const held = gate()
    const holderIn = gate()
    const holder = p.withLock(k, longTtlMs, async () => {
      holderIn.open()
      await held.promise
    })
    t.teardown(() => held.open())
    await holderIn.promise

    let ran = false
    const startedAt = Date.now()
    const outcome = await within(
      acquireTimeoutMs + promptlyMs,
      settle(
        p.withLock(k, longTtlMs, async () => {
          ran = true
        }),
      ),
    )
    const waitedMs = Date.now() - startedAt
    const error = 'value' in outcome && 'error' in outcome.value ? outcome.value.error : undefined
    t.ok(error instanceof LockUnavailableError, `the waiter is refused with LockUnavailableError (got ${describe(outcome)})`)
    t.equal(ran, false, 'and its fn never runs')
    t.ok(waitedMs >= acquireTimeoutMs * 0.9, `not before acquireTimeoutMs (${waitedMs} ms of ${acquireTimeoutMs})`)

    held.open()
    t.same(await settle(holder), { value: undefined }, 'the holder finishes')
    const again = await within(
      promptlyMs,
      p.withLock(k, longTtlMs, async () => 'again'),
    )
    t.same(again, { value: 'again' }, 'the key is free again: the refused waiter left nothing behind')
  })
}

/** Many callers on one key, spread over the given providers, increment a counter with awaits between read and write. */
async function exclusion(t: ContractTest, k: string, callers: LockProvider[]): Promise<void> {
  let counter = 0
  let inside = 0
  let maxInside = 0
  const runs = callers.map((p, i) =>
    p.withLock(k, longTtlMs, async () => {
      inside += 1
      maxInside = Math.max(maxInside, inside)
      const seen = counter
      await sleep(i % 3)
      await new Promise((resolve) => setImmediate(resolve))
      counter = seen + 1
      inside -= 1
      return i
    }),
  )
  const results = await within(callers.length * 1_000 + promptlyMs, Promise.all(runs))
  t.same(results, { value: callers.map((_, i) => i) }, 'every caller ran and got its own result')
  t.equal(maxInside, 1, 'no two callers were ever inside at once')
  t.equal(counter, callers.length, 'no increment was lost to interleaving')
}

interface Providers {
  make(settings?: LockContractSettings): Promise<LockProvider>
  /** Closes a provider before the test ends (the teardown then leaves it alone). */
  close(p: LockProvider): Promise<void>
}

/** Makes providers for one test and closes them when it ends. */
async function providers(t: ContractTest, makeLocks: MakeLocks): Promise<Providers> {
  const open = new Set<LockProvider>()
  t.teardown(async () => {
    for (const p of open) await p.close()
    open.clear()
  })
  return {
    async make(settings = {}) {
      const p = await makeLocks(settings)
      open.add(p)
      return p
    },
    async close(p) {
      open.delete(p)
      await p.close()
    },
  }
}

const runId = randomUUID().slice(0, 8)
function key(name: string): string {
  return `lock-contract:${runId}:${name}:${randomUUID()}`
}

function describe(outcome: Within<Settled<unknown>>): string {
  if ('timedOut' in outcome) return 'no answer in time'
  if ('value' in outcome.value) return 'the lock'
  const error = outcome.value.error
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}
