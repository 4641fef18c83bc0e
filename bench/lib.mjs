// Shared helpers for the benchmarks: start servers, wait for health, run autocannon, seed over HTTP.
import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'
import postgres from 'postgres'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import os from 'node:os'

export const root = join(dirname(fileURLToPath(import.meta.url)), '..')
// SLAW_CLI: another checkout's built CLI, to measure two versions with the same script.
export const cli = process.env.SLAW_CLI ?? join(root, 'packages/cli/dist/bin.cjs')
export const operatorKey = 'slaw_op_bench_operator_key_0000'

/**
 * The environment `npm start` gives node: each `NAME=${NAME:-default}` of the root start script
 * (glibc malloc settings, docs/startup-and-memory.md), unless this process has NAME set. Benchmarks
 * that start the CLI directly start it as an operator's `npm start` does.
 */
const startScript = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.start
export const npmStartEnv = Object.fromEntries(
  [...startScript.matchAll(/(\w+)=\$\{\1:-([^}]*)\}/g)].filter(([, name]) => process.env[name] === undefined).map(([, name, value]) => [name, value]),
)

export function machine() {
  return `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}`
}

export async function waitHealthy(base, timeoutMs = 30_000) {
  const start = Date.now()
  for (;;) {
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
  await waitHealthy(base)
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

/** Runs autocannon; returns requests/s (mean), latency p50/p99 (ms) and non-2xx count. */
export async function load(opts) {
  const result = await autocannon({ connections: 50, duration: 10, ...opts })
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

/** Drops and creates database `name` on the admin URL's server; returns its URL. */
export async function freshDb(name, base = adminUrl) {
  const admin = postgres(base, { max: 1, onnotice: () => {} })
  await admin.unsafe(`drop database if exists ${name} with (force)`)
  await admin.unsafe(`create database ${name}`)
  await admin.end()
  const u = new URL(base)
  u.pathname = `/${name}`
  return u.toString()
}
