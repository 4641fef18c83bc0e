// What reporting to a control tower costs the writes that fill the outbox (issue #4): issue create
// latency on an instance whose tower client is on (enrolled with a real tower, draining the outbox
// every second while the load runs) against an identical instance without one. Target: under 10 %.
//
//   node bench/outbox-overhead.mjs [--smoke]   (PostgreSQL at BENCH_PG_URL; BENCH_DURATION seconds per
//                       run, BENCH_ROUNDS alternating rounds, BENCH_CONNECTIONS, BENCH_SYNC_SEC)
//
// Writes bench/raw/results-outbox-c<connections>.json and prints a markdown table. --smoke: one
// round of 1 s at 2 connections after a 1 s warm-up; its three databases dropped.
//
// Everything runs from the TypeScript sources (tsx), each server in its own process: the tower (at a
// lower CPU priority: in production it runs elsewhere), the instance with the client ("on") and the
// one without ("off"), each instance on its own database. Each round loads both instances at the
// same time with the same number of connections, so whatever else the machine is doing hits both
// alike; the figures are the medians over the rounds. Not a test: figures go to bench/RESULTS.md.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { api, machine, operatorKey, root, stop, waitHealthy, freshDb, dropFreshDbs, freePort, size, smoke, writeResult } from './lib.mjs'

const self = fileURLToPath(import.meta.url)
const adminKey = 'bench-tower-admin-key'

// Child mode: one server in this process ------------------------------------------------------
const serve = process.argv.find((a) => a.startsWith('--serve='))?.slice(8)
if (serve) {
  const arg = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
  const port = Number(arg('port'))
  const db = arg('db')
  if (serve === 'tower') {
    const { createTower } = await import('@slaw/tower')
    const tower = await createTower({ databaseUrl: db, adminKey, autoApprove: true, rateLimit: false })
    await tower.listen({ port })
    process.on('SIGTERM', () => tower.close().then(() => process.exit(0)))
  } else {
    const { createInstance } = await import('@slaw/core')
    const { pgStorage } = await import('@slaw/storage-pg')
    const { processAdapter } = await import('@slaw/adapters')
    const towerUrl = arg('tower')
    let tower
    if (towerUrl) {
      const { towerClient } = await import('@slaw/tower-client')
      tower = towerClient({ url: towerUrl, instanceId: 'bench-on', syncSec: Number(process.env.BENCH_SYNC_SEC ?? 1), heartbeatSec: 10 })
    }
    const instance = await createInstance({
      storage: pgStorage({ url: db, max: 10 }),
      operatorKey,
      masterKey: '5a'.repeat(32),
      adapters: [processAdapter()],
      logger: false,
      ...(tower ? { tower } : {}),
    })
    await instance.listen({ port, host: '127.0.0.1' })
    process.on('SIGTERM', () => instance.close().then(() => process.exit(0)))
  }
} else {
  await main()
}

// Parent mode: the benchmark -------------------------------------------------------------------

/** One autocannon run: mean and percentile latencies (ms), requests/s, non-2xx. */
async function load(opts) {
  const r = await autocannon(opts)
  return { mean: +r.latency.average.toFixed(1), p50: r.latency.p50, p99: r.latency.p99, rps: Math.round(r.requests.average), non2xx: r.non2xx, errors: r.errors }
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

async function main() {
  const duration = size('BENCH_DURATION', 10, 1)
  const rounds = size('BENCH_ROUNDS', 8, 1)
  const connections = size('BENCH_CONNECTIONS', 4, 2)
  const log = (...a) => console.log('[bench]', ...a)

  function start(args, port, niceness = 0) {
    const argv = [process.execPath, '--import', 'tsx', '--conditions=slaw-source', self, ...args, `--port=${port}`]
    const [cmd, ...rest] = niceness ? ['nice', '-n', String(niceness), ...argv] : argv
    const child = spawn(cmd, rest, { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
    return { child, base: `http://127.0.0.1:${port}` }
  }

  const [towerDb, offDb, onDb] = await Promise.all([freshDb('slaw_bench_tower'), freshDb('slaw_bench_outbox_off'), freshDb('slaw_bench_outbox_on')])
  const tower = start(['--serve=tower', `--db=${towerDb}`], await freePort(), 10)
  const off = start(['--serve=instance', `--db=${offDb}`], await freePort())
  const on = start(['--serve=instance', `--db=${onDb}`, `--tower=${tower.base}`], await freePort())
  try {
    await waitHealthy(tower.base, 120_000, tower.child)
    await Promise.all([waitHealthy(off.base, 120_000, off.child), waitHealthy(on.base, 120_000, on.child)])
    await measure({ tower, off, on, duration, rounds, connections, log })
  } finally {
    await Promise.all([stop(off.child), stop(on.child)])
    await stop(tower.child)
    if (smoke) await dropFreshDbs()
  }
}

async function measure({ tower, off, on, duration, rounds, connections, log }) {
  log('servers up')

  // Enforce mode: the "on" instance answers once enrolled (auto-approved at once).
  for (let i = 0; ; i++) {
    const res = await fetch(`${on.base}/api/tower`, { headers: { authorization: `Bearer ${operatorKey}` } })
    if ((await res.json()).tower.state === 'connected') break
    if (i > 600) throw new Error('the instance did not enroll')
    await new Promise((r) => setTimeout(r, 100))
  }

  const targets = {}
  for (const [name, server] of [
    ['off', off],
    ['on', on],
  ]) {
    const { squad } = await api(server.base, 'POST', '/api/squads', { name: `Bench ${name}` })
    targets[name] = {
      url: `${server.base}/api/squads/${squad.id}/issues`,
      method: 'POST',
      headers: { authorization: `Bearer ${operatorKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'A benchmark issue with an ordinary title', priority: 'medium' }),
      connections,
    }
    await load({ ...targets[name], duration: smoke ? 1 : 3 }) // warm-up (JIT, caches, pools)
  }

  const runs = { off: [], on: [] }
  for (let r = 0; r < rounds; r++) {
    const [offRun, onRun] = await Promise.all([load({ ...targets.off, duration }), load({ ...targets.on, duration })])
    runs.off.push(offRun)
    runs.on.push(onRun)
    for (const [name, res] of [
      ['off', offRun],
      ['on', onRun],
    ])
      log(`round ${r + 1} ${name}: ${res.rps} req/s, mean ${res.mean} ms, p50 ${res.p50} ms, p99 ${res.p99} ms, non-2xx ${res.non2xx}`)
  }

  // What the "on" instance reported: drained to the tower.
  await api(on.base, 'POST', '/api/tower/sync')
  const status = (await api(on.base, 'GET', '/api/tower')).tower
  const instances = await (await fetch(`${tower.base}/api/admin/instances`, { headers: { authorization: `Bearer ${adminKey}` } })).json()
  const reported = instances.items.find((i) => i.instanceId === 'bench-on')

  const summary = (xs) => ({
    mean: median(xs.map((x) => x.mean)),
    p50: median(xs.map((x) => x.p50)),
    p99: median(xs.map((x) => x.p99)),
    rps: median(xs.map((x) => x.rps)),
    non2xx: xs.reduce((a, x) => a + x.non2xx, 0),
  })
  const offS = summary(runs.off)
  const onS = summary(runs.on)
  // Paired: each round's on/off ratio (both ran at the same time), then the median of the ratios.
  const paired = (field) => +((median(runs.on.map((x, i) => x[field] / runs.off[i][field])) - 1) * 100).toFixed(1)
  const results = {
    machine: machine(),
    date: new Date().toISOString(),
    duration,
    rounds,
    connections,
    syncSec: Number(process.env.BENCH_SYNC_SEC ?? 1),
    off: offS,
    on: onS,
    overheadPercent: { mean: paired('mean'), p50: paired('p50'), p99: paired('p99') },
    towerAfter: { spoolDepth: status.spoolDepth, acknowledgedCursor: reported?.acknowledgedCursor ?? null },
    runs,
  }
  log('written', writeResult(`results-outbox-c${connections}.json`, results))
  console.log('')
  console.log('| Run | mean | p50 | p99 | req/s | non-2xx |')
  console.log('|---|---|---|---|---|---|')
  console.log(`| tower client off | ${offS.mean} ms | ${offS.p50} ms | ${offS.p99} ms | ${offS.rps} | ${offS.non2xx} |`)
  console.log(`| tower client on (sync every ${results.syncSec} s) | ${onS.mean} ms | ${onS.p50} ms | ${onS.p99} ms | ${onS.rps} | ${onS.non2xx} |`)
  console.log(`| latency added (median of paired rounds) | ${results.overheadPercent.mean} % | ${results.overheadPercent.p50} % | ${results.overheadPercent.p99} % | | |`)
  console.log(`tower after the runs: spool depth ${status.spoolDepth}, acknowledged cursor ${results.towerAfter.acknowledgedCursor}`)
}
