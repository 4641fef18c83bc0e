// Benchmarks for heartbeat runs (issue #8). Not tests: figures go to bench/RESULTS.md.
//
//   node bench/heartbeats.mjs [--smoke]
//
// Needs PostgreSQL at BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres); the script
// creates and drops the database slaw_bench_heartbeats. Runs the TypeScript sources in-process (it
// restarts itself under tsx), so the figures are those of the code in the tree. Writes
// bench/raw/results-heartbeats.json. --smoke: 3 wakes, 200 jobs, 1,000 runs, 5 reads. Measures:
//   1. wake-to-spawn latency: from the 202 of POST /api/agents/{id}/wake (over HTTP) to the process
//      adapter's spawn of the child (BENCH_WAKES sequential wakes, default 50);
//   2. queue throughput: two nodes (two instances, two pools) claiming and finishing BENCH_JOBS no-op
//      jobs (default 10,000), every job id counted so none runs twice;
//   3. run lists with BENCH_RUNS finished runs (default 100,000) in one squad: p50/p95 of the squad's
//      run list (plain, by agent, by status, second page) and the dashboard, BENCH_READS each (default 200).
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

if (!process.execArgv.some((a) => a.includes('slaw-source'))) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--conditions=slaw-source', fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' })
  process.exit(r.status ?? 1)
}

const { default: postgres } = await import('postgres')
const { createInstance, uuidv7 } = await import('@slaw/core')
const { pgStorage } = await import('@slaw/storage-pg')
const { processAdapter } = await import('@slaw/adapters')
const { freshDb, dropFreshDbs, machine, operatorKey, size, writeResult } = await import('./lib.mjs')

const wakes = size('BENCH_WAKES', 50, 3)
const jobCount = size('BENCH_JOBS', 10_000, 200)
const runCount = size('BENCH_RUNS', 100_000, 1_000)
const reads = size('BENCH_READS', 200, 5)
const log = (...a) => console.log('[bench]', ...a)
const results = { machine: machine(), date: new Date().toISOString(), note: process.env.BENCH_NOTE ?? '', wakes, jobCount, runCount, reads }

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 100) / 100
}

const dbUrl = await freshDb('slaw_bench_heartbeats')

// 1. Wake-to-spawn ---------------------------------------------------------------------------------
{
  let spawned
  const inner = processAdapter()
  const timed = {
    type: 'process',
    wake(input) {
      // The adapter is called right before it spawns: the end of the measured interval.
      spawned?.(performance.now())
      return inner.wake(input)
    },
  }
  const instance = await createInstance({ storage: pgStorage({ url: dbUrl, max: 5 }), operatorKey, adapters: [timed], masterKey: '5a'.repeat(32), logger: false, jobs: { pollIntervalMs: 1_000 } })
  const base = await instance.listen({ port: 0 })
  const call = async (method, path, body) => {
    const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${operatorKey}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) })
    return { status: res.status, body: await res.json() }
  }
  const squad = (await call('POST', '/api/squads', { name: 'Bench wakes' })).body.squad
  const agent = (await call('POST', `/api/squads/${squad.id}/agents`, { name: 'sprinter', role: 'r', adapterType: 'process', adapterConfig: { command: '/bin/true' } })).body.agent
  const samples = []
  for (let i = 0; i < wakes; i++) {
    const spawnedAt = new Promise((resolve) => (spawned = resolve))
    const res = await call('POST', `/api/agents/${agent.id}/wake`, {})
    const accepted = performance.now()
    if (res.status !== 202) throw new Error(`wake ${res.status} ${JSON.stringify(res.body)}`)
    samples.push((await spawnedAt) - accepted)
    // Wait for the run to finish so the per-agent cap (1) never queues the next wake.
    for (;;) {
      const r = (await call('GET', `/api/heartbeat-runs/${res.body.run.id}`)).body.run
      if (r.status !== 'queued' && r.status !== 'running') break
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
  }
  results.wakeToSpawnMs = { p50: pct(samples, 50), p95: pct(samples, 95), max: pct(samples, 100) }
  log('wake-to-spawn', results.wakeToSpawnMs)
  await instance.close()
}

// 2. Queue throughput, two nodes -------------------------------------------------------------------
{
  const ran = new Map()
  const node = () => createInstance({ storage: pgStorage({ url: dbUrl, max: 8 }), operatorKey, masterKey: '5a'.repeat(32), logger: false, jobs: { concurrency: 64 }, migrate: false })
  const a = await node()
  const b = await node()
  for (const n of [a, b])
    n.jobs.register('bench_noop', async (job) => {
      ran.set(job.id, (ran.get(job.id) ?? 0) + 1)
      return null
    })
  for (let i = 0; i < jobCount; i += 500) {
    await a.storage.transaction(async (tx) => {
      for (let j = i; j < Math.min(jobCount, i + 500); j++) await tx.jobs.enqueue({ id: uuidv7(), kind: 'bench_noop', squadId: null, payload: {} })
    })
  }
  const t0 = performance.now()
  const [byA, byB] = await Promise.all([a.jobs.drain(1_000_000), b.jobs.drain(1_000_000)])
  const seconds = (performance.now() - t0) / 1000
  const twice = [...ran.values()].filter((n) => n > 1).length
  results.queue = { jobs: jobCount, byA, byB, seconds: Math.round(seconds * 100) / 100, jobsPerSec: Math.round(jobCount / seconds), ranTwice: twice, ranOnce: ran.size }
  log('queue', results.queue)
  if (twice || ran.size !== jobCount) throw new Error('a job ran twice or not at all')
  await a.close()
  await b.close()
}

// 3. Run lists over many finished runs -------------------------------------------------------------
{
  const instance = await createInstance({
    storage: pgStorage({ url: dbUrl, max: 5 }),
    operatorKey,
    adapters: [processAdapter()],
    masterKey: '5a'.repeat(32),
    logger: false,
    jobs: false,
    migrate: false,
  })
  const inject = async (path) => {
    const t0 = performance.now()
    const res = await instance.app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${operatorKey}` } })
    if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${res.body}`)
    return { ms: performance.now() - t0, body: JSON.parse(res.body) }
  }
  const squad = (await instance.app.inject({ method: 'POST', url: '/api/squads', headers: { authorization: `Bearer ${operatorKey}` }, payload: { name: 'Bench runs' } })).json().squad
  const mk = (name) =>
    instance.app.inject({
      method: 'POST',
      url: `/api/squads/${squad.id}/agents`,
      headers: { authorization: `Bearer ${operatorKey}` },
      payload: { name, role: 'r', adapterType: 'process', adapterConfig: { command: '/bin/true' } },
    })
  const agents = [(await mk('a1')).json().agent.id, (await mk('a2')).json().agent.id, (await mk('a3')).json().agent.id, (await mk('a4')).json().agent.id]
  const sql = postgres(dbUrl, { max: 1, onnotice: () => {} })
  const t0 = performance.now()
  // uuidv7-like ids in creation order over the last 30 days; statuses mixed as a busy squad has them.
  await sql.unsafe(`
    insert into heartbeat_runs (id, squad_id, agent_id, reason, status, liveness, started_at, finished_at, created_at, input_tokens, output_tokens, cost_cents)
    select (lpad(to_hex((extract(epoch from ts) * 1000)::bigint), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid,
           '${squad.id}', (array['${agents.join("','")}'])[1 + g % 4]::uuid, 'assignment',
           (array['succeeded','succeeded','succeeded','failed','cancelled','timed_out'])[1 + g % 6], 'completed', ts, ts + interval '40 seconds', ts, 1000, 200, 3
      from generate_series(1, ${runCount}) g, lateral (select now() - interval '30 days' + (g * interval '30 days' / ${runCount}) as ts) t`)
  // The day rollup the run repository keeps on every status change, filled for the seeded rows.
  // heartbeat_run_days holds append-only deltas with no unique key (migration 0005): one row per
  // squad, day and status here, as the retention job folds past days into.
  await sql.unsafe(`insert into heartbeat_run_days (squad_id, day, status, runs)
    select squad_id, (created_at at time zone 'UTC')::date, status, count(*) from heartbeat_runs
     where squad_id = '${squad.id}' group by 1, 2, 3`)
  await sql.unsafe('analyze heartbeat_runs')
  await sql.end()
  results.seedSeconds = Math.round((performance.now() - t0) / 100) / 10
  const first = await inject(`/api/squads/${squad.id}/heartbeat-runs`)
  const lists = {
    list: `/api/squads/${squad.id}/heartbeat-runs`,
    byAgent: `/api/squads/${squad.id}/heartbeat-runs?agentId=${agents[1]}`,
    byStatus: `/api/squads/${squad.id}/heartbeat-runs?status=timed_out`,
    secondPage: `/api/squads/${squad.id}/heartbeat-runs?cursor=${first.body.nextCursor}`,
    dashboard: `/api/squads/${squad.id}/dashboard`,
  }
  results.lists = {}
  for (const [name, path] of Object.entries(lists)) {
    for (let i = 0; i < 10; i++) await inject(path)
    const samples = []
    for (let i = 0; i < reads; i++) samples.push((await inject(path)).ms)
    results.lists[name] = { p50: pct(samples, 50), p95: pct(samples, 95) }
    log(name, results.lists[name])
  }
  await instance.close()
}

await dropFreshDbs()
log('written', writeResult('results-heartbeats.json', results))
