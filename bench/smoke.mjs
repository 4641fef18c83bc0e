#!/usr/bin/env node
// Runs every benchmark's smoke mode (`--smoke`: tiny sizes, about a second of load per step, only
// 127.0.0.1) one after another, prints one line per script and exits 1 if any failed. It checks that
// the scripts still run against the code in the tree, not how fast anything is.
//
//   node bench/smoke.mjs [name ...] [--verbose]
//
// PGlite-only scripts always run. Scripts that need PostgreSQL run when SLAW_TEST_DATABASE_URL is
// set (its server, which must be on 127.0.0.1, is their BENCH_PG_URL: each creates its own scratch
// databases there, named with a suffix of this run, and whatever a script leaves is dropped after
// it); scripts that need Redis run when SLAW_TEST_REDIS_URL is set. A script not listed below (a
// new one) runs too, needing PostgreSQL or Redis when its source mentions BENCH_PG_URL or
// freshDb, or REDIS. Each script is stopped after 4 minutes. --verbose streams their output.
import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'

const dir = dirname(fileURLToPath(import.meta.url))
const timeoutMs = 4 * 60_000

// What each script needs besides the built packages. pg: PostgreSQL; pgOptional: runs without it,
// and uses it when given; pgbench: pgbench on PATH too.
const known = {
  'pglite-statements.mjs': {},
  'profile.mjs': {},
  'idle-memory.mjs': { pgOptional: true },
  'foundation.mjs': { pg: true, pgbench: true },
  'checkout.mjs': { pg: true, pgbench: true },
  'cost-event-cpu.mjs': { pg: true },
  'cost-event-tail.mjs': { pg: true },
  'governance.mjs': { pg: true, pgbench: true },
  'heartbeats.mjs': { pg: true },
  'routines.mjs': { pg: true },
  'secrets.mjs': { pg: true },
  'outbox-overhead.mjs': { pg: true },
  'tower-ingest.mjs': { pg: true },
  'soak.mjs': { pg: true },
  'events.mjs': { pg: true },
  'console.mjs': {}, // needs /usr/bin/chromium for its timings; without it, only the bundle size
  'subscribers.mjs': {},
}
// Imported or started by the scripts above, not benchmarks themselves (as is any `*-node.mjs`).
const helpers = new Set(['smoke.mjs', 'lib.mjs', 'seed.mjs', 'bare-server.mjs'])
const isHelper = (f) => helpers.has(f) || f.endsWith('-node.mjs')

const args = process.argv.slice(2)
const verbose = args.includes('--verbose')
const only = args.filter((a) => !a.startsWith('--')).map((a) => (a.endsWith('.mjs') ? a : `${a}.mjs`))

const scripts = readdirSync(dir)
  .filter((f) => f.endsWith('.mjs') && !isHelper(f))
  .sort((a, b) => order(a) - order(b) || a.localeCompare(b))
  .filter((f) => !only.length || only.includes(f))
  .map((file) => ({ file, needs: known[file] ?? guessNeeds(file) }))
function order(f) {
  const i = Object.keys(known).indexOf(f)
  return i < 0 ? Infinity : i
}
function guessNeeds(file) {
  const text = readFileSync(join(dir, file), 'utf8')
  return { pg: /BENCH_PG_URL|freshDb|adminUrl/.test(text), redis: /REDIS/.test(text) }
}

const pgUrl = process.env.SLAW_TEST_DATABASE_URL
const redisUrl = process.env.SLAW_TEST_REDIS_URL
const loopback = (url) => ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(new URL(url).hostname)
const pgbench = spawnSync('pgbench', ['--version'], { stdio: 'ignore' }).status === 0

function skipReason({ pg, pgbench: needsPgbench, redis }) {
  if (pg && !pgUrl) return 'needs SLAW_TEST_DATABASE_URL'
  if (pg && !loopback(pgUrl)) return 'SLAW_TEST_DATABASE_URL is not on 127.0.0.1'
  if (needsPgbench && !pgbench) return 'needs pgbench on PATH'
  if (redis && !redisUrl) return 'needs SLAW_TEST_REDIS_URL'
  if (redis && !loopback(redisUrl)) return 'SLAW_TEST_REDIS_URL is not on 127.0.0.1'
  return null
}

/** Runs one script in its own process group; resolves with its exit code (null: timed out) and output. */
function run(file, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(dir, file), '--smoke'], { cwd: join(dir, '..'), env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const keep = (chunk) => {
      if (verbose) process.stdout.write(chunk)
      output = (output + chunk).slice(-20_000)
    }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {}
    }, timeoutMs)
    child.on('close', (code) => {
      clearTimeout(timer)
      // Whatever the script started and left running goes with its group.
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {}
      resolve({ code: timedOut ? null : code, output })
    })
  })
}

/** Drops the databases a script left behind (named with this run's suffix). */
async function dropLeftovers(suffix) {
  const sql = postgres(pgUrl, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql`select datname from pg_database where right(datname, ${suffix.length}) = ${suffix}`
    for (const { datname } of rows) await sql.unsafe(`drop database if exists "${datname}" with (force)`)
    return rows.length
  } finally {
    await sql.end()
  }
}

let failed = 0
let skipped = 0
const width = Math.max(...scripts.map((s) => s.file.length), 10)
for (const [i, { file, needs }] of scripts.entries()) {
  const name = file.padEnd(width)
  const skip = skipReason(needs)
  if (skip) {
    console.log(`skip  ${name}  ${skip}`)
    skipped++
    continue
  }
  const suffix = `_smoke_${process.pid}_${i}`
  const env = { ...process.env, BENCH_SMOKE: '1', BENCH_DB_SUFFIX: suffix }
  // Only the servers named here: an operator's DATABASE_URL or REDIS_URL would reach the CLI.
  for (const name of ['BENCH_PG_URL', 'BENCH_REDIS_URL', 'DATABASE_URL', 'REDIS_URL']) delete env[name]
  if (pgUrl && loopback(pgUrl)) env.BENCH_PG_URL = pgUrl
  if (redisUrl && loopback(redisUrl)) env.BENCH_REDIS_URL = redisUrl
  const t0 = performance.now()
  const { code, output } = await run(file, env)
  const seconds = ((performance.now() - t0) / 1000).toFixed(1).padStart(5)
  let left = 0
  if (env.BENCH_PG_URL) left = await dropLeftovers(suffix).catch(() => 0)
  if (code === 0) {
    console.log(`ok    ${name}  ${seconds} s${left ? ` (dropped ${left} database${left > 1 ? 's' : ''} it left)` : ''}`)
    continue
  }
  failed++
  console.log(`FAIL  ${name}  ${seconds} s  ${code === null ? `timed out after ${timeoutMs / 60_000} min` : `exit ${code}`}`)
  if (!verbose) for (const line of output.trimEnd().split('\n').slice(-25)) console.log(`      | ${line}`)
}
const ran = scripts.length - skipped
console.log(`${failed ? `${failed} of ${ran} failed` : `${ran} passed`}${skipped ? `, ${skipped} skipped` : ''}`)
process.exit(failed ? 1 : 0)
