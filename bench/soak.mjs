// Soak benchmark (issue 9): a mixed load on PostgreSQL for a long time; RSS must stay within 1.5× of
// its value right after warm-up. Not a test: figures go to bench/RESULTS.md.
//
//   node bench/soak.mjs [--smoke]       (the built CLI, as `npm install` leaves it)
//
// Env: BENCH_PG_URL (admin URL; default postgres://postgres@127.0.0.1:5432/postgres),
// SOAK_DURATION_SEC (default 600), SOAK_WARMUP_SEC (default 60, at most a fifth of the duration),
// SOAK_CONNECTIONS (default 50), SOAK_SAMPLE_SEC (default 5), SOAK_FROM_SOURCE=1 (run the TypeScript
// sources through tsx instead of the built dist). Exits 1 when RSS grew past 1.5×. Prints the summary
// and writes it with the samples to bench/raw/results-soak.json. --smoke: 3 s at 4 connections,
// samples every second, 1 s idle after; passes when requests were answered (RSS is not judged).
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import autocannon from 'autocannon'
import { api, machine, npmStartEnv, operatorKey, root, rssMb, stop, waitHealthy, freshDb, dropFreshDbs, freePort, size, smoke, writeResult } from './lib.mjs'

const duration = size('SOAK_DURATION_SEC', 600, 3)
const warmup = Math.min(size('SOAK_WARMUP_SEC', 60, 0), Math.floor(duration / 5))
const connections = size('SOAK_CONNECTIONS', 50, 4)
const sampleSec = size('SOAK_SAMPLE_SEC', 5, 1)
const log = (...a) => console.log('[soak]', ...a)

const url = await freshDb(`slaw_soak_${Date.now()}`)
const port = await freePort()
const args = process.env.SOAK_FROM_SOURCE ? ['--import', 'tsx', '--conditions=slaw-source', join(root, 'packages/cli/src/bin.ts')] : [join(root, 'packages/cli/dist/bin.cjs')]
const child = spawn(process.execPath, [...args, 'start', '--port', String(port)], {
  cwd: root,
  env: { ...process.env, ...npmStartEnv, DATABASE_URL: url, SVC_OPERATOR_KEY: operatorKey, LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'ignore', 'inherit'],
})
const base = `http://127.0.0.1:${port}`
await waitHealthy(base, 120_000, child)

// A squad, two agents, issues to read, check out and comment on.
const { squad } = await api(base, 'POST', '/api/squads', { name: 'Soak' })
const agents = []
for (const n of ['soak-a', 'soak-b']) {
  const { agent } = await api(base, 'POST', `/api/squads/${squad.id}/agents`, { name: n, role: 'general', adapterType: 'process' })
  agents.push(agent)
}
const issues = []
for (let i = 0; i < 40; i++) issues.push((await api(base, 'POST', `/api/squads/${squad.id}/issues`, { title: `soak ${i}`, assigneeAgentId: agents[i % 2].id })).issue)

const json = { 'content-type': 'application/json', authorization: `Bearer ${operatorKey}` }
const auth = { authorization: `Bearer ${operatorKey}` }
let n = 0
/** One request of the mix, different on every call (ids and bodies vary, like real traffic). */
function nextRequest() {
  const i = n++
  const issue = issues[i % issues.length]
  const agent = agents[i % 2]
  switch (i % 8) {
    case 0:
      return { method: 'GET', path: `/api/issues/${issue.id}`, headers: auth }
    case 1:
      return { method: 'GET', path: `/api/squads/${squad.id}/issues?limit=50`, headers: auth }
    case 2:
      return { method: 'POST', path: `/api/squads/${squad.id}/issues`, headers: json, body: JSON.stringify({ title: `created ${i}`, priority: 'low' }) }
    case 3:
      return { method: 'POST', path: `/api/issues/${issue.id}/comments`, headers: json, body: JSON.stringify({ body: `comment ${i}` }) }
    case 4:
      return { method: 'POST', path: `/api/issues/${issue.id}/checkout`, headers: json, body: JSON.stringify({ agentId: agent.id, expectedStatuses: ['todo', 'in_progress', 'backlog'] }) }
    case 5:
      return { method: 'POST', path: `/api/issues/${issue.id}/release`, headers: json, body: '{}' }
    case 6:
      return {
        method: 'POST',
        path: `/api/squads/${squad.id}/cost-events`,
        headers: json,
        body: JSON.stringify({ agentId: agent.id, model: 'claude-sonnet-4', inputTokens: 100 + (i % 50), outputTokens: 20, costCents: 1 }),
      }
    default:
      return { method: 'GET', path: `/api/squads/${squad.id}/dashboard`, headers: auth }
  }
}

const samples = []
let running = true
const sampler = (async () => {
  const t0 = Date.now()
  while (running) {
    samples.push({ t: Math.round((Date.now() - t0) / 1000), rss: +rssMb(child.pid).toFixed(1) })
    await sleep(sampleSec * 1000)
  }
})()
log(`${duration} s, ${connections} connections, warm-up ${warmup} s, on PostgreSQL; ${machine()}`)
const result = await autocannon({
  url: base,
  connections,
  duration,
  requests: [{ setupRequest: (req) => ({ ...req, ...nextRequest() }) }],
})
running = false
await sampler
const afterLoad = +rssMb(child.pid).toFixed(1)
await sleep(smoke ? 1_000 : 10_000)
const idle = +rssMb(child.pid).toFixed(1)

const postWarmup = samples.find((s) => s.t >= warmup)?.rss ?? samples[0].rss
const max = Math.max(...samples.filter((s) => s.t >= warmup).map((s) => s.rss))
const ratio = +(max / postWarmup).toFixed(2)
const summary = {
  date: new Date().toISOString(),
  machine: machine(),
  duration,
  warmup,
  connections,
  requests: result.requests.total,
  rps: Math.round(result.requests.average),
  p50: result.latency.p50,
  p99: result.latency.p99,
  non2xx: result.non2xx,
  errors: result.errors,
  rssMb: { postWarmup, max, afterLoad, [smoke ? 'idleAfter1s' : 'idleAfter10s']: idle },
  ratio,
  pass: smoke ? result.requests.total > 0 : ratio <= 1.5,
  samples,
}
const { samples: _, ...shown } = summary
console.log(JSON.stringify(shown, null, 2))
log('written', writeResult('results-soak.json', summary))
await stop(child)
await dropFreshDbs()
process.exit(summary.pass ? 0 : 1)
