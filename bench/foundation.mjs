// Benchmarks for the foundation's hot paths (issue #2). Not tests: figures go to bench/RESULTS.md.
//
//   node bench/foundation.mjs [--smoke]      (the built CLI; PostgreSQL at BENCH_PG_URL, pgbench on PATH)
//
// Writes bench/raw/results-foundation.json and prints the results as a markdown table. Smoke mode:
// 1 s per run, 2,000 seeded issues instead of 100,000/200,000, 4 agents, 1 start; results to the
// temp dir; its database dropped.
// Every figure is compared with a baseline measured in the same run on the same machine: a bare
// fastify route returning the same JSON, or pgbench running the same SQL. Ratios hold on a noisy box.
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import postgres from 'postgres'
import { api, checkoutVsPgbench, load, machine, operatorKey, pgbench, rssMb, startBare, startSlaw, freshDb, dropFreshDbs, freePort, smoke, size, writeResult } from './lib.mjs'
import { bumpCounterSql, seedIssuesSql } from './seed.mjs'
import { pgliteStorage } from '@slaw/storage-pg/pglite'

const duration = size('BENCH_DURATION', 10, 1)
const clients = smoke ? 4 : 50 // connections and pgbench clients of the @50 runs
const coCount = smoke ? 2_000 : 200_000 // todo issues for the checkout run
const bigCount = smoke ? 2_000 : 100_000 // issues for list and search
const starts = smoke ? 1 : 5
const results = { machine: machine(), date: new Date().toISOString(), duration, runs: {} }
const log = (...a) => console.log('[bench]', ...a)

/** A squad with one agent (with a key) and `inbox` issues assigned to it, through the API. */
async function seedBasics(base, inbox = smoke ? 5 : 50) {
  const { squad } = await api(base, 'POST', '/api/squads', { name: `Bench ${Date.now()}` })
  const { agent } = await api(base, 'POST', `/api/squads/${squad.id}/agents`, { name: 'bench-agent', role: 'general', adapterType: 'process' })
  const { token } = await api(base, 'POST', `/api/agents/${agent.id}/keys`, { name: 'bench' })
  let issueId
  for (let i = 0; i < inbox; i++) {
    const { issue } = await api(base, 'POST', `/api/squads/${squad.id}/issues`, { title: `inbox item ${i}`, priority: ['critical', 'high', 'medium', 'low'][i % 4], assigneeAgentId: agent.id })
    issueId ??= issue.id
  }
  return { squad, agent, token, issueId }
}

async function readPaths(base, paths, token) {
  const bodies = {}
  for (const [path, tok] of paths) {
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${tok ?? token}` } })
    bodies[path] = await res.text()
  }
  return bodies
}

async function readsVsBare(label, base, seed, bare) {
  const issuePath = `/api/issues/${seed.issueId}`
  const inboxPath = '/api/agents/me/inbox-lite'
  const slawIssue = await load({ url: `${base}${issuePath}`, headers: { authorization: `Bearer ${operatorKey}` }, duration })
  const bareIssue = await load({ url: `${bare.base}${issuePath}`, duration })
  const slawInbox = await load({ url: `${base}${inboxPath}`, headers: { authorization: `Bearer ${seed.token}` }, duration })
  const bareInbox = await load({ url: `${bare.base}${inboxPath}`, duration })
  results.runs[`${label}: GET /api/issues/{id} @${clients}`] = { slaw: slawIssue, bareFastify: bareIssue, ratio: +(slawIssue.rps / bareIssue.rps).toFixed(2) }
  results.runs[`${label}: GET /api/agents/me/inbox-lite @${clients}`] = { slaw: slawInbox, bareFastify: bareInbox, ratio: +(slawInbox.rps / bareInbox.rps).toFixed(2) }
  log(label, 'issue', slawIssue.rps, 'vs bare', bareIssue.rps, '| inbox', slawInbox.rps, 'vs bare', bareInbox.rps)
}

async function listAndSearch(label, base, squadId) {
  const paths = {
    'list (newest 100)': `/api/squads/${squadId}/issues`,
    'list status=todo,blocked': `/api/squads/${squadId}/issues?status=todo,blocked`,
    'search q=login': `/api/squads/${squadId}/issues?q=login`,
    'search q="payment timeout"': `/api/squads/${squadId}/issues?q=${encodeURIComponent('payment timeout')}`,
    'search q=identifier': `/api/squads/${squadId}/issues?q=BIGS-77777`,
  }
  for (const [name, path] of Object.entries(paths)) {
    const r = await load({ url: `${base}${path}`, headers: { authorization: `Bearer ${operatorKey}` }, connections: 4, duration: Math.min(duration, 8) })
    results.runs[`${label}: ${name}, ${bigCount.toLocaleString('en')} issues @4`] = r
    log(label, name, 'p50', r.p50, 'p99', r.p99, 'rps', r.rps)
  }
}

async function startupAndMemory(label, env) {
  const port = await freePort()
  const ms = []
  let rss
  for (let i = 0; i < starts; i++) {
    const s = await startSlaw({ port, env })
    ms.push(Math.round(s.startMs))
    if (i === starts - 1) {
      await sleep(smoke ? 500 : 3000)
      rss = Math.round(rssMb(s.child.pid))
    }
    await s.stop()
  }
  ms.sort((a, b) => a - b)
  const median = ms[Math.floor(ms.length / 2)]
  results.runs[`${label}: start to first 200 /api/health (${starts} runs)`] = { medianMs: median, minMs: ms[0], maxMs: ms[ms.length - 1] }
  results.runs[`${label}: idle resident memory`] = { rssMb: rss }
  log(label, 'start median', median, 'ms; idle RSS', rss, 'MB')
}

// ---------------------------------------------------------------------------------------------
const tmp = mkdtempSync(join(tmpdir(), 'slaw-bench-'))
try {
  // PostgreSQL --------------------------------------------------------------------------------
  const url = await freshDb('slaw_bench')
  const slaw = await startSlaw({ port: await freePort(), env: { DATABASE_URL: url } })
  const sql = postgres(url, { max: 2, onnotice: () => {} })
  const seed = await seedBasics(slaw.base)
  const bodiesFile = join(tmp, 'bodies.json')
  writeFileSync(
    bodiesFile,
    JSON.stringify(
      await readPaths(
        slaw.base,
        [
          [`/api/issues/${seed.issueId}`, operatorKey],
          ['/api/agents/me/inbox-lite', seed.token],
        ],
        seed.token,
      ),
    ),
  )
  const bare = await startBare(bodiesFile, await freePort())
  await readsVsBare('PostgreSQL', slaw.base, seed, bare)

  // Writes: POST issue vs pgbench of the same statements.
  const writeSquad = (await api(slaw.base, 'POST', '/api/squads', { name: 'Writes' })).squad
  const create = await load({
    url: `${slaw.base}/api/squads/${writeSquad.id}/issues`,
    method: 'POST',
    duration,
    headers: { authorization: `Bearer ${operatorKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ title: 'bench issue' }),
  })
  const pgbSquad = (await api(slaw.base, 'POST', '/api/squads', { name: 'Pgbench Writes' })).squad
  const pgCreate = pgbench(url, 'issue-create.sql', { squad: pgbSquad.id, prefix: pgbSquad.issuePrefix }, { clients, duration })
  results.runs[`PostgreSQL: POST issue @${clients}`] = { slaw: create, pgbench: pgCreate, ratio: +(create.rps / pgCreate.tps).toFixed(2) }
  log('POST issue', create.rps, 'vs pgbench', pgCreate.tps)

  // Checkout of distinct issues: 50 agents, 200,000 todo issues seeded by SQL (smoke: 4 and 2,000).
  const { checkout, pgbench: pgCheckout } = await checkoutVsPgbench({ base: slaw.base, sql, url, clients, count: coCount, duration })
  results.runs[`PostgreSQL: checkout of distinct issues @${clients}`] = {
    slaw: checkout,
    pgbench: pgCheckout,
    ratio: +(checkout.rps / pgCheckout.tps).toFixed(2),
    note: 'pgbench picks random issues; some were already checked out (its UPDATE then matches nothing, which is cheaper)',
  }
  log('checkout', checkout.rps, 'non2xx', checkout.non2xx, 'vs pgbench', pgCheckout.tps)

  // List and search with 100,000 issues in one squad (smoke: 2,000).
  const big = (await api(slaw.base, 'POST', '/api/squads', { name: 'Big Squad', slug: 'bigsquad' })).squad
  await sql.unsafe(seedIssuesSql({ squadId: big.id, prefix: big.issuePrefix, count: bigCount }))
  await sql.unsafe(bumpCounterSql(big.id, bigCount))
  await sql.unsafe('analyze')
  await listAndSearch('PostgreSQL', slaw.base, big.id)
  await sql.end()
  await bare.stop()
  await slaw.stop()

  // PGlite ------------------------------------------------------------------------------------
  // Seed 100,000 issues (smoke: 2,000) into a PGlite data dir in this process, then serve it from the CLI.
  const dataDir = join(tmp, 'pglite')
  {
    const storage = await pgliteStorage({ dataDir })
    await storage.migrate()
    await storage.close()
  }
  const litePort = await freePort()
  const lite = await startSlaw({ port: litePort, env: { SVC_DATA_DIR: dataDir } })
  const liteSeed = await seedBasics(lite.base)
  const liteBig = (await api(lite.base, 'POST', '/api/squads', { name: 'Big Squad', slug: 'bigsquad' })).squad
  await lite.stop()
  {
    const storage = await pgliteStorage({ dataDir })
    const { sql: ksql } = await import('kysely')
    await ksql.raw(seedIssuesSql({ squadId: liteBig.id, prefix: liteBig.issuePrefix, count: bigCount })).execute(storage.db)
    await ksql.raw(bumpCounterSql(liteBig.id, bigCount)).execute(storage.db)
    await ksql.raw('analyze').execute(storage.db)
    await storage.close()
  }
  const lite2 = await startSlaw({ port: litePort, env: { SVC_DATA_DIR: dataDir } })
  writeFileSync(
    bodiesFile,
    JSON.stringify(
      await readPaths(
        lite2.base,
        [
          [`/api/issues/${liteSeed.issueId}`, operatorKey],
          ['/api/agents/me/inbox-lite', liteSeed.token],
        ],
        liteSeed.token,
      ),
    ),
  )
  const bare2 = await startBare(bodiesFile, await freePort())
  await readsVsBare('PGlite', lite2.base, liteSeed, bare2)
  await listAndSearch('PGlite', lite2.base, liteBig.id)
  await bare2.stop()
  await lite2.stop()

  // Start-up and idle memory ------------------------------------------------------------------
  await startupAndMemory('PGlite memory://', { SVC_DATA_DIR: 'memory://' })
  await startupAndMemory('PostgreSQL', { DATABASE_URL: url })
} finally {
  rmSync(tmp, { recursive: true, force: true })
  if (smoke) await dropFreshDbs()
}
log('wrote', writeResult('results-foundation.json', results))

// The results as a markdown table, each run beside its target.
const target = (name) =>
  name.includes('GET /api/issues') || name.includes('inbox')
    ? '≥ 0.40 of bare fastify'
    : name.includes('POST issue') || name.includes('checkout')
      ? '≥ 0.50 of pgbench'
      : name.includes(' issues @4')
        ? 'p50 < 15 ms, p99 < 60 ms'
        : name.includes('start')
          ? '< 1.5 s'
          : name.includes('memory')
            ? name.startsWith('PGlite')
              ? '< 200 MB'
              : '< 100 MB'
            : ''
console.log(`\n${results.date.slice(0, 10)}, ${results.machine}, ${duration} s per run\n`)
console.log('| Run | slaw | baseline (same run) | ratio | target |\n|---|---|---|---|---|')
for (const [name, v] of Object.entries(results.runs)) {
  if (v.bareFastify) console.log(`| ${name} | ${v.slaw.rps} req/s (p50 ${v.slaw.p50} ms, p99 ${v.slaw.p99} ms) | bare fastify ${v.bareFastify.rps} req/s | ${v.ratio} | ${target(name)} |`)
  else if (v.pgbench)
    console.log(`| ${name} | ${v.slaw.rps} req/s (p50 ${v.slaw.p50} ms, p99 ${v.slaw.p99} ms, non-2xx ${v.slaw.non2xx}) | pgbench ${v.pgbench.tps} tps | ${v.ratio} | ${target(name)} |`)
  else if (v.medianMs !== undefined) console.log(`| ${name} | median ${v.medianMs} ms (min ${v.minMs}, max ${v.maxMs}) | | | ${target(name)} |`)
  else if (v.rssMb !== undefined) console.log(`| ${name} | ${v.rssMb} MB RSS after ${smoke ? 0.5 : 3} s idle | | | ${target(name)} |`)
  else console.log(`| ${name} | p50 ${v.p50} ms, p99 ${v.p99} ms (${v.rps} req/s, non-2xx ${v.non2xx}) | | | ${target(name)} |`)
}
