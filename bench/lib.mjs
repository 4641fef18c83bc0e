// Shared helpers for the benchmarks: start servers, wait for health, run autocannon and pgbench,
// seed over HTTP, scratch databases, free ports, smoke mode and where raw results go (bench/README.md).
import { execFileSync, spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { createServer } from 'node:net'
import autocannon from 'autocannon'
import postgres from 'postgres'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import os from 'node:os'
import { bumpCounterSql, seedIssuesSql } from './seed.mjs'

export const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/**
 * Smoke mode (`--smoke` or BENCH_SMOKE=1): tiny sizes, about a second of load per step, raw results
 * written to the temp dir instead of bench/raw/, scratch databases dropped at the end, and nothing
 * loaded but 127.0.0.1. It checks that a script still runs end to end, not how fast anything is.
 * Children started by a script inherit it through BENCH_SMOKE.
 */
export const smoke = process.argv.includes('--smoke') || process.env.BENCH_SMOKE === '1'
if (smoke) process.env.BENCH_SMOKE = '1'

/** A size: the environment's NAME (or `full`) in a real run, always `tiny` in smoke mode. */
export function size(name, full, tiny) {
  return smoke ? tiny : Number(process.env[name] ?? full)
}

/** Writes a raw result as JSON to bench/raw/<file> (smoke mode: the temp dir); returns the path. */
export function writeResult(file, value) {
  const dir = smoke ? join(os.tmpdir(), 'slaw-bench-smoke') : join(root, 'bench/raw')
  mkdirSync(dir, { recursive: true })
  const path = join(dir, file)
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`)
  return path
}

/** A free TCP port on 127.0.0.1 (asked of the kernel, then released). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}
// SLAW_CLI: another checkout's built CLI, to measure two versions with the same script.
export const cli = process.env.SLAW_CLI ?? join(root, 'packages/cli/dist/bin.cjs')
export const operatorKey = 'slaw_op_bench_operator_key_0000'

/**
 * The environment `npm start` gives node: each `NAME=${NAME:-default}` of the root start script
 * (glibc malloc settings, docs/startup-and-memory.md), unless this process has NAME set. Benchmarks
 * that start the CLI directly start it as an operator's `npm start` does.
 */
const startScript = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.start
export const npmStartEnv = Object.fromEntries([...startScript.matchAll(/(\w+)=\$\{\1:-([^}]*)\}/g)].filter(([, name]) => process.env[name] === undefined).map(([, name, value]) => [name, value]))

export function machine() {
  return `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}`
}

/** Polls GET /api/health until 200; fails at once if `child` (the server's process) has exited. */
export async function waitHealthy(base, timeoutMs = 30_000, child) {
  const start = Date.now()
  for (;;) {
    if (child && (child.exitCode !== null || child.signalCode !== null)) throw new Error(`the server for ${base} exited (${child.exitCode ?? child.signalCode}) before it was healthy`)
    try {
      const res = await fetch(`${base}/api/health`)
      if (res.status === 200) return Date.now() - start
    } catch {}
    if (Date.now() - start > timeoutMs) throw new Error(`${base} not healthy after ${timeoutMs} ms`)
    await sleep(5)
  }
}

/** Starts `slaw start` in a child process; resolves once healthy. */
export async function startSlaw({ port, env = {} }) {
  const t0 = performance.now()
  const child = spawn(process.execPath, [cli, 'start', '--port', String(port)], {
    env: { ...process.env, ...npmStartEnv, SVC_OPERATOR_KEY: operatorKey, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const base = `http://127.0.0.1:${port}`
  await waitHealthy(base, 30_000, child)
  return { child, base, startMs: performance.now() - t0, stop: () => stop(child) }
}

export async function startBare(bodiesFile, port) {
  const child = spawn(process.execPath, [join(root, 'bench/bare-server.mjs'), bodiesFile, String(port)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
  await new Promise((resolve) => child.once('message', resolve))
  return { child, base: `http://127.0.0.1:${port}`, stop: () => stop(child) }
}

export function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once('exit', resolve)
    child.kill('SIGTERM')
  })
}

export function rssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024
}

/** Runs autocannon; returns requests/s (mean), latency p50/p99 (ms) and non-2xx count (smoke: ≤ 4 connections, 1 s). */
export async function load(opts) {
  const result = await autocannon({ connections: 50, duration: 10, ...opts, ...(smoke ? { connections: Math.min(opts.connections ?? 4, 4), duration: Math.min(opts.duration ?? 1, 1) } : {}) })
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  }
}

export async function api(base, method, path, body, token = operatorKey) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  })
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return JSON.parse(text)
}

/** The admin URL the benchmarks create their databases with (BENCH_PG_URL). */
export const adminUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

/**
 * A benchmark database's name: `name`, plus BENCH_DB_SUFFIX when set (bench/smoke.mjs sets one per
 * run, so parallel runs never share a database and it can drop whatever a run left), and in smoke
 * mode without one a suffix of this process's id.
 */
export function dbName(name) {
  return `${name}${process.env.BENCH_DB_SUFFIX ?? (smoke ? `_smoke_${process.pid}` : '')}`
}

const created = new Set()

/** Drops and creates database dbName(`name`) on the admin URL's server; returns its URL. */
export async function freshDb(name, base = adminUrl) {
  const host = new URL(base).hostname
  if (smoke && !['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host)) throw new Error(`smoke mode loads only 127.0.0.1, not ${host}`)
  const db = dbName(name)
  const admin = postgres(base, { max: 1, onnotice: () => {} })
  await admin.unsafe(`drop database if exists ${db} with (force)`)
  await admin.unsafe(`create database ${db}`)
  await admin.end()
  created.add(db)
  const u = new URL(base)
  u.pathname = `/${db}`
  return u.toString()
}

/** Drops every database freshDb made in this process (smoke runs end with it). */
export async function dropFreshDbs(base = adminUrl) {
  if (!created.size) return
  const admin = postgres(base, { max: 1, onnotice: () => {} })
  for (const db of created) await admin.unsafe(`drop database if exists ${db} with (force)`)
  created.clear()
  await admin.end()
}

/**
 * pgbench running bench/sql/<script> against `url` (`vars` given with -D), `clients` clients for
 * `duration` s; its transactions per second and failed transactions.
 */
export function pgbench(url, script, vars, { clients, duration }) {
  const args = ['-n', '-M', 'extended', '-c', String(clients), '-j', '2', '-T', String(duration), '-f', join(root, 'bench/sql', script)]
  args.push(...Object.entries(vars).flatMap(([k, v]) => ['-D', `${k}=${v}`]), url)
  const out = execFileSync('pgbench', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  const tps = Number(/tps = ([\d.]+)/.exec(out)?.[1])
  const failed = Number(/number of failed transactions: (\d+)/.exec(out)?.[1] ?? 0)
  return { tps: Math.round(tps), failed }
}

/**
 * Checkout of distinct issues against pgbench running the same statements (bench/sql/checkout.sql)
 * on the same database: a squad with `clients` agents and `count` todo issues seeded by SQL, then
 * `clients` connections checking out the first half of the issues in turn for `duration` s, then
 * pgbench. `sql` is a postgres.js client of `url`.
 */
export async function checkoutVsPgbench({ base, sql, url, clients, count, duration }) {
  const squad = (await api(base, 'POST', '/api/squads', { name: 'Checkout' })).squad
  const agents = []
  for (let i = 0; i < clients; i++) {
    agents.push((await api(base, 'POST', `/api/squads/${squad.id}/agents`, { name: `co-${String(i).padStart(2, '0')}`, role: 'general', adapterType: 'process' })).agent.id)
  }
  await sql.unsafe(seedIssuesSql({ squadId: squad.id, prefix: squad.issuePrefix, count, status: 'todo' }))
  await sql.unsafe(bumpCounterSql(squad.id, count))
  const ids = (await sql`select id from issues where squad_id = ${squad.id} and number <= ${count / 2} order by number`).map((r) => r.id)
  let next = 0
  const checkout = await load({
    url: base,
    duration,
    connections: clients,
    requests: [
      {
        method: 'POST',
        setupRequest: (req) => {
          const n = next++
          return {
            ...req,
            path: `/api/issues/${ids[n % ids.length]}/checkout`,
            headers: { authorization: `Bearer ${operatorKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ agentId: agents[n % agents.length] }),
          }
        },
      },
    ],
  })
  return { checkout, pgbench: pgbench(url, 'checkout.sql', { squad: squad.id, count }, { clients, duration }) }
}

/**
 * A squad with one agent (no budget) on the server at `base`, and the autocannon options that POST
 * that agent's cost events from `connections` connections.
 */
export async function costEventLoad(base, connections) {
  const { squad } = await api(base, 'POST', '/api/squads', { name: 'Tail' })
  const { agent } = await api(base, 'POST', `/api/squads/${squad.id}/agents`, { name: 'tail', role: 'engineer', adapterType: 'process' })
  return {
    url: `${base}/api/squads/${squad.id}/cost-events`,
    method: 'POST',
    headers: { authorization: `Bearer ${operatorKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agentId: agent.id, model: 'claude-sonnet-4-5', inputTokens: 1200, cachedInputTokens: 0, outputTokens: 300, costCents: 2 }),
    connections,
  }
}
