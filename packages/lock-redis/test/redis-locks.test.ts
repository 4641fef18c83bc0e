import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { connect } from 'node:net'
import { delimiter, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { Redis } from 'ioredis'
import { LockUnavailableError } from '@slaw/core'
import { freePort, gate, lockContract, settle, within, type Settled, type Within } from '@slaw/core/testing'
import { redisLocks } from '@slaw/lock-redis'

const url = process.env.SLAW_TEST_REDIS_URL
// Every run writes under its own prefix, so runs sharing one Redis never meet.
const keyPrefix = `slaw:test:${randomUUID()}:`

t.test('redisLocks', url ? {} : { skip: 'Redis suite skipped: set SLAW_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379) to run it' }, async (t) => {
  const redisUrl = url!
  const raw = new Redis(redisUrl)
  t.teardown(async () => {
    const left = await raw.keys(`${keyPrefix}*`)
    if (left.length > 0) await raw.del(...left)
    await raw.quit()
  })

  t.test('lock contract', async (t) => {
    await lockContract(t, (settings) => redisLocks({ url: redisUrl, keyPrefix, ...settings }), {
      sharedAcrossInstances: true,
      extendsWhileRunning: true,
      // The watchdog extends every ttl/3: with 1 s a test process may stall for most of a second
      // (a loaded CI machine) before a live holder's lock could lapse; 400 ms was not enough.
      ttlMs: 1_000,
    })
  })

  t.test('a lock is a key under keyPrefix that only its owner extends or deletes', async (t) => {
    const locks = redisLocks({ url: redisUrl, keyPrefix })
    t.teardown(() => locks.close())
    const k = `owner:${randomUUID()}`
    const ttlMs = 300
    await locks.withLock(k, ttlMs, async () => {
      const pttl = await raw.pttl(keyPrefix + k)
      t.ok(pttl > 0 && pttl <= ttlMs, `the key exists with the lock's ttl (${pttl} ms)`)
      // The lock is lost, as when it expired during a long pause, and someone else takes it.
      await raw.set(keyPrefix + k, 'someone-else', 'PX', 10_000)
      await sleep(ttlMs * 1.5)
    })
    const pttl = await raw.pttl(keyPrefix + k)
    t.ok(pttl > 5_000, `the watchdog did not shorten the new owner's lock (${pttl} ms left)`)
    t.equal(await raw.get(keyPrefix + k), 'someone-else', "releasing did not delete the new owner's lock")
    await raw.del(keyPrefix + k)
  })

  t.test('a holder that stops extending (its process died) loses the lock and another proceeds', async (t) => {
    // The holder's node: a client of its own, which we cut as if the process had died.
    const holderClient = new Redis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 })
    t.teardown(() => holderClient.disconnect())
    const a = redisLocks({ client: holderClient, keyPrefix })
    const b = redisLocks({ url: redisUrl, keyPrefix })
    t.teardown(async () => {
      await a.close()
      await b.close()
    })
    const k = `dies:${randomUUID()}`
    const ttlMs = 300
    const holderIn = gate()
    const stuck = gate()
    t.teardown(() => stuck.open())
    const holder = a.withLock(k, ttlMs, async () => {
      holderIn.open()
      await stuck.promise
      return 'late'
    })
    await holderIn.promise

    let waiterInAt = 0
    const waiter = b.withLock(k, 10_000, async () => {
      waiterInAt = Date.now()
    })
    await sleep(ttlMs * 2.5)
    t.equal(waiterInAt, 0, 'while the holder lives, its watchdog keeps the lock past its ttl')

    holderClient.disconnect()
    // Nobody extends the lock any more: what is left of it is at most one ttl (read from Redis,
    // not timed by this process, so a loaded machine cannot fail it).
    const left = await raw.pttl(keyPrefix + k)
    t.ok(left <= ttlMs, `the dead holder's lock expires within a ttl (${left} ms left)`)
    t.same(await within(30_000, waiter), { value: undefined }, 'the waiter gets the lock')
    t.ok(waiterInAt > 0, 'the waiter ran')

    stuck.open()
    t.same(await within(3_000, holder), { value: 'late' }, "the dead holder's fn still returns its result")
  })

  t.test('Redis that cannot be reached gives LockUnavailableError promptly', async (t) => {
    const port = await freePort()
    // acquireTimeoutMs far above connectTimeoutMs: the refusal must come from the connection check.
    const locks = redisLocks({ url: `redis://127.0.0.1:${port}`, keyPrefix, connectTimeoutMs: 500, acquireTimeoutMs: 60_000 })
    t.teardown(() => locks.close())
    for (const attempt of ['first', 'second']) {
      let ran = false
      const outcome = await within(
        30_000,
        settle(
          locks.withLock('unreachable', 1_000, async () => {
            ran = true
          }),
        ),
      )
      t.ok(isLockUnavailable(outcome), `${attempt} call refused with LockUnavailableError (${describe(outcome)})`)
      t.match(describe(outcome), /redis is not reachable|redis .+ failed:/, 'by the connect timeout, not by waiting out acquireTimeoutMs')
      t.equal(ran, false, 'fn never runs')
    }
  })

  t.test('close() leaves a caller-owned client open', async (t) => {
    const client = new Redis(redisUrl)
    t.teardown(() => client.quit())
    const locks = redisLocks({ client, keyPrefix })
    t.equal(await locks.withLock(`owned:${randomUUID()}`, 1_000, async () => 'ran'), 'ran', 'the lock works')
    await locks.close()
    t.equal(client.status, 'ready', 'the client is still connected')
    t.equal(await client.ping(), 'PONG', 'and usable')
    const after = await settle(locks.withLock('after-close', 1_000, async () => 'ran'))
    t.ok('error' in after && after.error instanceof LockUnavailableError, 'the closed provider refuses')
  })

  t.test('options are checked', async (t) => {
    t.throws(() => redisLocks({ url: redisUrl, client: raw }), TypeError, 'url and client together')
    t.throws(() => redisLocks({ retryDelayMs: { min: 50, max: 10 } }), RangeError, 'retry max below min')
    const locks = redisLocks({ url: redisUrl, keyPrefix })
    t.teardown(() => locks.close())
    await t.rejects(
      locks.withLock('bad-ttl', 0, async () => 'ran'),
      RangeError,
      'a ttl of 0',
    )
  })

  const redisServer = findRedisServer()
  t.test('the Redis server goes away during a critical section', redisServer ? {} : { skip: 'redis-server is not on PATH' }, async (t) => {
    const server = redisServer!
    const port = await freePort()
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
    const child = spawn(server, args, { stdio: 'ignore' })
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    t.teardown(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
    })
    await waitForPort(port, 5_000)

    const locks = redisLocks({
      url: `redis://127.0.0.1:${port}`,
      keyPrefix,
      connectTimeoutMs: 500,
      commandTimeoutMs: 500,
      acquireTimeoutMs: 60_000,
    })
    t.teardown(() => locks.close())
    const k = 'server-dies'

    const done = await within(
      5_000,
      locks.withLock(k, 5_000, async () => {
        child.kill('SIGKILL')
        await exited
        return 'done'
      }),
    )
    t.same(done, { value: 'done' }, 'the critical section under way finishes with its result')

    for (const attempt of ['next', 'one after']) {
      let ran = false
      const outcome = await within(
        30_000,
        settle(
          locks.withLock(k, 5_000, async () => {
            ran = true
          }),
        ),
      )
      t.ok(isLockUnavailable(outcome), `the ${attempt} withLock is refused with LockUnavailableError (${describe(outcome)})`)
      t.match(describe(outcome), /redis is not reachable|redis .+ failed:/, 'promptly: by the connect or command timeout, not by waiting out acquireTimeoutMs')
      t.equal(ran, false, 'and its fn never runs')
    }

    t.same(await within(30_000, locks.close()), { value: undefined }, 'close() does not hang on the dead server')
  })

  t.test('every lock was released or has expired: no key is left under the prefix', async (t) => {
    t.same(await raw.keys(`${keyPrefix}*`), [])
  })
})

function isLockUnavailable(outcome: Within<Settled<unknown>>): boolean {
  return 'value' in outcome && 'error' in outcome.value && outcome.value.error instanceof LockUnavailableError
}

function describe(outcome: Within<Settled<unknown>>): string {
  if ('timedOut' in outcome) return 'no answer in time'
  if ('value' in outcome.value) return 'it ran'
  const error = outcome.value.error
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (open) return
    if (Date.now() > deadline) throw new Error(`redis-server did not listen on ${port} within ${timeoutMs} ms`)
    await sleep(25)
  }
}

function findRedisServer(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'redis-server')
    if (dir && existsSync(candidate)) return candidate
  }
  return undefined
}
