import t from 'tap'
import { spawn } from 'node:child_process'
import postgres from 'postgres'
import { createInstance, JobRejected, queueWake, uuidv7, type InstanceOptions } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'
import { backends, freshDatabase, testDatabaseUrl } from './helpers/backends.js'
import { eachBackend, makeApi, operatorToken, testMasterKey } from './helpers/instance.js'
import { addAgent } from './helpers/fixtures.js'
import { fakeClock, steeredAdapter } from './helpers/runs.js'
import { nodeEntry } from '../../../scripts/node-entry.js'

const clock = fakeClock()
const options: Partial<InstanceOptions> = { jobs: false, now: clock.now, adapters: [steeredAdapter('process')] }

eachBackend(
  t,
  'job queue: dedupe keys, retries with backoff, deferral, lease expiry and renewal, max attempts',
  async (t, api) => {
    clock.reset()
    const { storage, jobs } = api.instance
    // Dedupe: the same key while unfinished is one job.
    const a = await storage.jobs.enqueue({ id: uuidv7(), kind: 'probe', squadId: null, payload: { n: 1 }, dedupeKey: 'k' })
    const b = await storage.jobs.enqueue({ id: uuidv7(), kind: 'probe', squadId: null, payload: { n: 2 }, dedupeKey: 'k' })
    t.equal(b.id, a.id, 'second enqueue returns the first job')
    const other = await storage.jobs.enqueue({ id: uuidv7(), kind: 'probe', squadId: null, payload: {}, dedupeKey: 'other' })
    t.not(other.id, a.id)

    // Retries: a failing handler is retried with growing delays, then fails for good.
    let calls = 0
    jobs.register('flaky', async () => {
      calls++
      throw new Error(`boom ${calls}`)
    })
    const f = await storage.jobs.enqueue({ id: uuidv7(), kind: 'flaky', squadId: null, payload: {}, maxAttempts: 3 })
    t.equal(await jobs.drain(), 1)
    let job = (await storage.jobs.get(f.id))!
    t.match(job, { status: 'queued', attempts: 1, error: 'boom 1' }, 'queued again after a failure')
    const firstDelay = job.runAt.getTime() - clock.now().getTime()
    t.ok(firstDelay >= 500 && firstDelay <= 1_000, `first backoff in [0.5 s, 1 s]: ${firstDelay}`)
    t.equal(await jobs.drain(), 0, 'not due before its backoff')
    clock.advance(1_000)
    await jobs.drain()
    job = (await storage.jobs.get(f.id))!
    const secondDelay = job.runAt.getTime() - clock.now().getTime()
    t.ok(secondDelay >= 1_000 && secondDelay <= 2_000, `second backoff doubles: ${secondDelay}`)
    clock.advance(2_000)
    await jobs.drain()
    job = (await storage.jobs.get(f.id))!
    t.match(job, { status: 'failed', attempts: 3, error: 'boom 3' }, 'failed after maxAttempts')
    t.equal(calls, 3)

    // Lease: a claimed job is not claimable until its lease ends; renewal extends it.
    const l = await storage.jobs.enqueue({ id: uuidv7(), kind: 'leased', squadId: null, payload: {} })
    const [mine] = await storage.jobs.claim(['leased'], 'node-a', 10_000, 5, clock.now())
    t.equal(mine!.id, l.id)
    t.same(await storage.jobs.claim(['leased'], 'node-b', 10_000, 5, new Date(clock.now().getTime() + 9_000)), [], 'held')
    t.ok(await storage.jobs.renew(l.id, 'node-a', 10_000, new Date(clock.now().getTime() + 9_000)), 'renewed')
    t.same(await storage.jobs.claim(['leased'], 'node-b', 10_000, 5, new Date(clock.now().getTime() + 15_000)), [], 'renewal holds it')
    const [taken] = await storage.jobs.claim(['leased'], 'node-b', 10_000, 5, new Date(clock.now().getTime() + 20_000))
    t.equal(taken!.id, l.id, 'claimable once the lease expired (its node died)')
    t.equal(taken!.attempts, 2)
    t.notOk(await storage.jobs.renew(l.id, 'node-a', 10_000, clock.now()), 'the old node lost it')
    t.notOk(await storage.jobs.complete(l.id, 'node-a', null), 'and cannot complete it')
    t.ok(await storage.jobs.complete(l.id, 'node-b', { ok: true }))

    // Deferral does not count an attempt.
    const d = await storage.jobs.enqueue({ id: uuidv7(), kind: 'later', squadId: null, payload: {} })
    await storage.jobs.claim(['later'], 'node-a', 10_000, 1, clock.now())
    t.ok(await storage.jobs.defer(d.id, 'node-a', new Date(clock.now().getTime() + 5_000)))
    t.match(await storage.jobs.get(d.id), { status: 'queued', attempts: 0 })
    t.equal(await storage.jobs.promote('later', clock.now()), 1, 'promoted when a slot frees')

    // A finished job frees its dedupe key; retention deletes old finished jobs.
    const again = await storage.jobs.enqueue({ id: uuidv7(), kind: 'leased', squadId: null, payload: {}, dedupeKey: 'x' })
    const [c] = await storage.jobs.claim(['leased'], 'n', 1_000, 1, clock.now())
    await storage.jobs.complete(c!.id, 'n', null)
    const fresh = await storage.jobs.enqueue({ id: uuidv7(), kind: 'leased', squadId: null, payload: {}, dedupeKey: 'x' })
    t.not(fresh.id, again.id, 'a finished job no longer dedupes')
    t.ok((await storage.jobs.purgeFinished(new Date(Date.now() + 86_400_000), 1_000)) >= 3, 'finished jobs purged')
  },
  options,
)

// Several nodes on one PostgreSQL: each job claimed and run exactly once.
t.test('two nodes race to claim 200 queued wakes: each run exactly once [postgres]', testDatabaseUrl ? {} : { skip: 'set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const db = await freshDatabase()
  const seen = new Map<string, number>()
  const counting = () => {
    const a = steeredAdapter('process')
    a.next = async (input) => {
      seen.set(input.runId, (seen.get(input.runId) ?? 0) + 1)
      return { status: 'succeeded', exitCode: 0 }
    }
    return a
  }
  const common = { operatorKey: operatorToken, masterKey: testMasterKey, logger: false, jobs: false as const, runs: { maxConcurrentRunsPerAgent: 1_000 } }
  const nodeA = await createInstance({ ...common, storage: pgStorage({ url: db.url, max: 4 }), adapters: [counting()] })
  const nodeB = await createInstance({ ...common, storage: pgStorage({ url: db.url, max: 4 }), adapters: [counting()] })
  t.teardown(async () => {
    await nodeA.close()
    await nodeB.close()
    await db.dispose()
  })
  const api = await makeApi(nodeA, 'postgres')
  const s = await api.seed('Race')
  const agents = [s.agentId, ...(await Promise.all(Array.from({ length: 3 }, (_, i) => addAgent(api, s.squadId, `racer${i}`)))).map((a) => a.id)]
  const issues: string[] = []
  for (let i = 0; i < 50; i++) issues.push((await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: `Race ${i}` })).body.issue.id)
  await nodeA.storage.transaction(async (tx) => {
    for (const agentId of agents) for (const issueId of issues) await queueWake(tx, { squadId: s.squadId, agentId, issueId, reason: 'manual' })
  })
  const [ranA, ranB] = await Promise.all([nodeA.jobs.drain(), nodeB.jobs.drain()])
  t.equal(ranA + ranB, 200, `every job claimed once (A ${ranA}, B ${ranB})`)
  t.equal(seen.size, 200, 'every run woken')
  t.same(
    [...seen.values()].filter((n) => n !== 1),
    [],
    'no run woken twice',
  )
  const runs = await nodeA.storage.heartbeatRuns.list({ squadId: s.squadId, statuses: ['succeeded'], limit: 500 })
  t.equal(runs.length, 200, 'all succeeded')
})

// kill -9 a node in the middle of a run: once its lease expires another node ends the run node_lost.
t.test('a node killed with SIGKILL mid-run: the run ends timed_out with node_lost [postgres]', testDatabaseUrl ? {} : { skip: 'set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const db = await freshDatabase()
  const survivorClock = fakeClock()
  const survivor = await createInstance({
    storage: pgStorage({ url: db.url, max: 4 }),
    operatorKey: operatorToken,
    masterKey: testMasterKey,
    logger: false,
    jobs: false,
    now: survivorClock.now,
    adapters: [steeredAdapter('process')],
  })
  const child = spawn(process.execPath, [...nodeEntry(new URL('./helpers/run-node.ts', import.meta.url)), db.url], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(async () => {
    child.kill('SIGKILL')
    await survivor.close()
    await db.dispose()
  })
  const lines: string[] = []
  const waitFor = (prefix: string) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const line = lines.find((l) => l.startsWith(prefix))
        if (line) resolve(line)
      }
      child.stdout!.on('data', (chunk: Buffer) => {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean))
        check()
      })
      child.on('exit', (code) => reject(new Error(`the run node exited (${code}) before ${prefix}`)))
      check()
    })
  await waitFor('READY')
  const api = await makeApi(survivor, 'postgres')
  const s = await api.seed('Kill')
  const woke = await api.call('POST', `/api/agents/${s.agentId}/wake`, {})
  t.equal(woke.status, 202)
  const line = await waitFor('RUNNING')
  t.equal(line, `RUNNING ${woke.body.run.id}`, 'the other node runs it')
  t.equal((await api.call('GET', `/api/heartbeat-runs/${woke.body.run.id}`)).body.run.status, 'running')
  child.kill('SIGKILL')
  await new Promise((resolve) => child.once('exit', resolve))
  const sqlClient = postgres(db.url, { max: 1, onnotice: () => undefined })
  t.teardown(() => sqlClient.end())
  const runJob = async () =>
    (await sqlClient<Array<{ status: string; locked_by: string; locked_until: Date; attempts: number }>>`select status, locked_by, locked_until, attempts from jobs where kind = 'heartbeat_run'`)[0]!
  const held = await runJob()
  const lockedUntil = held.locked_until.getTime()
  // Decided by the lease the dead node last wrote, not by the wall clock. The survivor's drain may
  // run other jobs due by then (the dead node queued the hourly retention slot by its own clock,
  // due within the lease when this runs just before a full hour), so the run's job is what is checked.
  survivorClock.set(lockedUntil - 1)
  await survivor.jobs.drain()
  t.same(await runJob(), held, 'the dead node still holds the lease')
  survivorClock.set(lockedUntil + 1)
  await survivor.jobs.drain()
  t.not((await runJob()).locked_by, held.locked_by, 'lease expired: the survivor claimed the job')
  t.match((await api.call('GET', `/api/heartbeat-runs/${woke.body.run.id}`)).body.run, { status: 'timed_out', error: 'node_lost' })
})

void backends

eachBackend(
  t,
  'job queue: a job rejected as impossible fails at once, without retries',
  async (t, api) => {
    clock.reset()
    const { storage, jobs } = api.instance
    let calls = 0
    jobs.register('impossible', async () => {
      calls++
      throw new JobRejected('the payload names nothing')
    })
    const job = await storage.jobs.enqueue({ id: uuidv7(), kind: 'impossible', squadId: null, payload: {} })
    await jobs.drain()
    clock.advance(3_600_000)
    await jobs.drain()
    const after = await storage.jobs.get(job.id)
    t.equal(calls, 1, 'run once')
    t.equal(after?.status, 'failed')
    t.equal(after?.error, 'the payload names nothing')
  },
  options,
)

// Regression: a kick that arrived while a poll was claiming was lost when that poll ended, because
// the poll planned its next look (the poll interval: an hour here) over the kick's (now). The job
// then waited for the next poll. Found by detached-work.test.ts timing out on a loaded machine.
eachBackend(
  t,
  'a kick during a poll is never pushed back to the poll interval',
  async (t, api) => {
    const { storage, jobs } = api.instance
    const repo = storage.jobs
    const claim = repo.claim.bind(repo)
    let claims = 0
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    let firstClaimStarted!: () => void
    const started = new Promise<void>((r) => (firstClaimStarted = r))
    repo.claim = async (...args: Parameters<typeof claim>) => {
      claims++
      if (claims === 1) {
        firstClaimStarted()
        await held
        return [] // the poll saw nothing yet: the job below commits after its snapshot
      }
      return claim(...args)
    }
    t.teardown(() => {
      repo.claim = claim
    })
    let ran = 0
    jobs.register('kicked_probe', async () => {
      ran++
      return null
    })
    await api.instance.app.ready() // starts the runner: its first poll claims at once
    await started
    const job = await storage.jobs.enqueue({ id: uuidv7(), kind: 'kicked_probe', squadId: null, payload: {} })
    jobs.kick() // a look now...
    release() // ...while the poll ends and plans its next one an hour away
    // Timers fire in the order they fall due: the kick's (0 ms, set first) before this one.
    await new Promise((r) => setTimeout(r, 5))
    if (!t.ok(claims >= 2, 'the kick looked for work after the poll ended')) return
    while ((await storage.jobs.get(job.id))!.status !== 'completed') await new Promise((r) => setImmediate(r))
    t.equal(ran, 1, 'the kicked job ran')
  },
  { jobs: { concurrency: 2, pollIntervalMs: 3_600_000 } },
)
