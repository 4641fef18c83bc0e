#!/usr/bin/env node
// Profiles one request scenario: starts `slaw start` (the built CLI) under `--cpu-prof`, seeds a squad,
// an agent and an issue over HTTP, loads the scenario with autocannon, stops the server and prints
// where the server's CPU went (self time by function, and by package).
//
//   node bench/profile.mjs cost_event            # PGlite memory://
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/slaw_prof node bench/profile.mjs create_issue
//
// Scenarios: get_issue, create_issue, add_comment, cost_event, inbox_lite, and checkout (distinct
// issues, PostgreSQL only). PROFILE_DISK=1 puts PGlite
// on disk (SVC_DATA_DIR in a temp dir) instead of memory://. PROFILE_SECONDS (10),
// PROFILE_CONNECTIONS (10), PROFILE_TOP (40). The .cpuprofile is kept (path printed) for DevTools.
// PROFILE_OFF=1 measures the same scenario without the profiler (throughput and latency only).
// PROFILE_NODE_FLAGS passes node flags to the server. --smoke (or BENCH_SMOKE=1): 1 s at 2
// connections, and the temp dir with the profile is removed.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import autocannon from 'autocannon'
import postgres from 'postgres'
import { cli, freePort, npmStartEnv, operatorKey, smoke, stop, waitHealthy } from './lib.mjs'
import { bumpCounterSql, seedIssuesSql } from './seed.mjs'

const scenario = process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 'cost_event'
const seconds = smoke ? 1 : Number(process.env.PROFILE_SECONDS ?? 10)
const connections = smoke ? 2 : Number(process.env.PROFILE_CONNECTIONS ?? 10)
const top = Number(process.env.PROFILE_TOP ?? (smoke ? 5 : 40))
const port = await freePort()
const dir = mkdtempSync(join(tmpdir(), 'slaw-prof-'))
const base = `http://127.0.0.1:${port}`
const env = { ...process.env, ...npmStartEnv, SVC_OPERATOR_KEY: operatorKey, PORT: String(port), HOST: '127.0.0.1', SVC_DATA_DIR: join(dir, 'data') }
// PGlite: in memory, or on disk (as the side-by-side harness loads it) with PROFILE_DISK=1.
if (!process.env.DATABASE_URL && process.env.PROFILE_DISK !== '1') env.SVC_DATA_DIR = 'memory://'

const profiling = process.env.PROFILE_OFF !== '1'
// PROFILE_NODE_FLAGS: node flags for the server only (e.g. --v8-pool-size=2), not for autocannon.
const nodeFlags = (process.env.PROFILE_NODE_FLAGS ?? '').split(' ').filter(Boolean)
const child = spawn(process.execPath, [...nodeFlags, ...(profiling ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : []), cli, 'start'], { env, stdio: ['ignore', 'ignore', 'inherit'] })
await waitHealthy(base, 60_000, child)

const op = { authorization: `Bearer ${operatorKey}`, 'content-type': 'application/json' }
async function call(method, path, body, headers = op) {
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const json = await res.json()
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
  return json
}
const squad = (await call('POST', '/api/squads', { name: `Profile ${Date.now()}` })).squad
const agent = (await call('POST', `/api/squads/${squad.id}/agents`, { name: 'prof', role: 'engineer', adapterType: 'process' })).agent
const key = (await call('POST', `/api/agents/${agent.id}/keys`, { name: 'prof' })).token
const issue = (await call('POST', `/api/squads/${squad.id}/issues`, { title: 'profiled', assigneeAgentId: agent.id })).issue

const scenarios = {
  get_issue: { method: 'GET', path: `/api/issues/${issue.id}`, headers: op },
  create_issue: { method: 'POST', path: `/api/squads/${squad.id}/issues`, headers: op, body: JSON.stringify({ title: 'profiled create', description: 'by autocannon' }) },
  add_comment: { method: 'POST', path: `/api/issues/${issue.id}/comments`, headers: op, body: JSON.stringify({ body: 'profiled comment' }) },
  cost_event: {
    method: 'POST',
    path: `/api/squads/${squad.id}/cost-events`,
    headers: op,
    body: JSON.stringify({ agentId: agent.id, model: 'claude-sonnet-4-5', inputTokens: 1200, cachedInputTokens: 0, outputTokens: 300, costCents: 2 }),
  },
  inbox_lite: { method: 'GET', path: '/api/agents/me/inbox-lite', headers: { authorization: `Bearer ${key}` } },
}
// checkout (PostgreSQL only): distinct issues seeded by SQL, as bench/checkout.mjs loads them.
if (scenario === 'checkout') {
  if (!process.env.DATABASE_URL) throw new Error('checkout needs DATABASE_URL (PostgreSQL)')
  const sql = postgres(process.env.DATABASE_URL, { max: 1, onnotice: () => {} })
  const count = smoke ? 1_000 : 100_000
  await sql.unsafe(seedIssuesSql({ squadId: squad.id, prefix: squad.issuePrefix, from: 2, count: count - 1, status: 'todo' }))
  await sql.unsafe(bumpCounterSql(squad.id, count))
  const ids = (await sql`select id from issues where squad_id = ${squad.id} and number > 1 order by number`).map((r) => r.id)
  await sql.end()
  let next = 0
  scenarios.checkout = {
    method: 'POST',
    setupRequest: (req) => ({ ...req, path: `/api/issues/${ids[next++ % ids.length]}/checkout`, headers: op, body: JSON.stringify({ agentId: agent.id }) }),
  }
}
const s = scenarios[scenario]
if (!s) throw new Error(`unknown scenario ${scenario}; one of ${Object.keys(scenarios).join(', ')}, checkout`)
const result = await autocannon(
  s.setupRequest
    ? { url: base, requests: [{ method: s.method, setupRequest: s.setupRequest }], connections, duration: seconds }
    : { url: base + s.path, method: s.method, headers: s.headers, body: s.body, connections, duration: seconds },
)
console.log(`${scenario}: ${result.requests.average} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}`)
await stop(child)
if (!profiling) {
  rmSync(dir, { recursive: true, force: true })
  process.exit(0)
}

const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))
if (!file) throw new Error(`no profile written in ${dir}`)
const profile = JSON.parse(readFileSync(join(dir, file), 'utf8'))
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const self = new Map()
const dt = profile.timeDeltas
for (let i = 0; i < profile.samples.length; i++) {
  const n = byId.get(profile.samples[i])
  self.set(n, (self.get(n) ?? 0) + (dt[i] ?? 0))
}
const total = [...self.values()].reduce((a, b) => a + b, 0)
const fnTotals = new Map()
const pkgTotals = new Map()
for (const [n, us] of self) {
  const { functionName, url, lineNumber } = n.callFrame
  const where = url.replace(/^file:\/\//, '').replace(/.*node_modules\//, '')
  const k = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`
  fnTotals.set(k, (fnTotals.get(k) ?? 0) + us)
  const pkg = !url
    ? functionName
    : url.includes('node_modules/')
      ? url.replace(/.*node_modules\/((@[^/]+\/)?[^/]+).*/, '$1')
      : url.startsWith('node:')
        ? 'node:' + url.slice(5).split('/')[0]
        : url.includes('/packages/')
          ? 'slaw:' + url.replace(/.*\/packages\/([^/]+).*/, '$1')
          : url
  pkgTotals.set(pkg, (pkgTotals.get(pkg) ?? 0) + us)
}
const pct = (us) => ((100 * us) / total).toFixed(1).padStart(5) + '%'
console.log(`\nby package (of ${(total / 1e6).toFixed(1)} s sampled):`)
for (const [k, us] of [...pkgTotals].sort((a, b) => b[1] - a[1]).slice(0, smoke ? 5 : 20)) console.log(`${pct(us)}  ${k}`)
console.log('\nby function (self time):')
for (const [k, us] of [...fnTotals].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(us)}  ${k}`)
if (smoke) rmSync(dir, { recursive: true, force: true })
else console.log(`\nprofile: ${join(dir, file)}`)
