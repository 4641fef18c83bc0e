// Soak benchmark (issue 9): a mixed load on PostgreSQL for a long time; RSS must stay within 1.5× of
// its value right after warm-up. Not a test: figures go to bench/RESULTS.md.
//
//   npm run build && node bench/soak.mjs
//
// Env: BENCH_PG_URL (admin URL; default postgres://postgres@127.0.0.1:5432/postgres),
// SOAK_DURATION_SEC (default 600), SOAK_WARMUP_SEC (default 60, at most a fifth of the duration),
// SOAK_CONNECTIONS (default 50), SOAK_SAMPLE_SEC (default 5), SOAK_FROM_SOURCE=1 (run the TypeScript
// sources through tsx instead of the built dist). Exits 1 when RSS grew past 1.5×.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import autocannon from 'autocannon'
import postgres from 'postgres'
import { api, machine, npmStartEnv, operatorKey, root, rssMb, stop, waitHealthy } from './lib.mjs'

const adminUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const duration = Number(process.env.SOAK_DURATION_SEC ?? 600)
const warmup = Math.min(Number(process.env.SOAK_WARMUP_SEC ?? 60), Math.floor(duration / 5))
const connections = Number(process.env.SOAK_CONNECTIONS ?? 50)
const sampleSec = Number(process.env.SOAK_SAMPLE_SEC ?? 5)
const log = (...a) => console.log('[soak]', ...a)

const name = `slaw_soak_${Date.now()}`
const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
await admin.unsafe(`create database ${name}`)
const url = new URL(adminUrl)
url.pathname = `/${name}`

const port = 3900 + Math.floor(Math.random() * 90)
const args = process.env.SOAK_FROM_SOURCE
  ? ['--import', 'tsx', '--conditions=slaw-source', join(root, 'packages/cli/src/bin.ts')]
  : [join(root, 'packages/cli/dist/bin.cjs')]
const child = spawn(process.execPath, [...args, 'start', '--port', String(port)], {
  cwd: root,
  env: { ...process.env, ...npmStartEnv, DATABASE_URL: url.toString(), SVC_OPERATOR_KEY: operatorKey, LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'ignore', 'inherit'],
})
const base = `http://127.0.0.1:${port}`
await waitHealthy(base, 120_000)

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
    case 0: return { method: 'GET', path: `/api/issues/${issue.id}`, headers: auth }
    case 1: return { method: 'GET', path: `/api/squads/${squad.id}/issues?limit=50`, headers: auth }
    case 2: return { method: 'POST', path: `/api/squads/${squad.id}/issues`, headers: json, body: JSON.stringify({ title: `created ${i}`, priority: 'low' }) }
    case 3: return { method: 'POST', path: `/api/issues/${issue.id}/comments`, headers: json, body: JSON.stringify({ body: `comment ${i}` }) }
    case 4: return { method: 'POST', path: `/api/issues/${issue.id}/checkout`, headers: json, body: JSON.stringify({ agentId: agent.id, expectedStatuses: ['todo', 'in_progress', 'backlog'] }) }
    case 5: return { method: 'POST', path: `/api/issues/${issue.id}/release`, headers: json, body: '{}' }
    case 6: return { method: 'POST', path: `/api/squads/${squad.id}/cost-events`, headers: json, body: JSON.stringify({ agentId: agent.id, model: 'claude-sonnet-4', inputTokens: 100 + (i % 50), outputTokens: 20, costCents: 1 }) }
    default: return { method: 'GET', path: `/api/squads/${squad.id}/dashboard`, headers: auth }
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
await sleep(10_000)
const idle = +rssMb(child.pid).toFixed(1)

const postWarmup = samples.find((s) => s.t >= warmup)?.rss ?? samples[0].rss
const max = Math.max(...samples.filter((s) => s.t >= warmup).map((s) => s.rss))
const ratio = +(max / postWarmup).toFixed(2)
const summary = {
  date: new Date().toISOString(),
  machine: machine(),
  duration, warmup, connections,
  requests: result.requests.total, rps: Math.round(result.requests.average), p50: result.latency.p50, p99: result.latency.p99,
  non2xx: result.non2xx, errors: result.errors,
  rssMb: { postWarmup, max, afterLoad, idleAfter10s: idle }, ratio, pass: ratio <= 1.5,
  samples,
}
console.log(JSON.stringify(summary, null, 2))
await stop(child)
await admin.unsafe(`drop database if exists ${name} with (force)`)
await admin.end()
process.exit(summary.pass ? 0 : 1)
