// Idle memory of `slaw start`, measured as an operator sees it: the built CLI is started on each
// backend with npm start's environment, and 10 s after /api/health answers {"status":"ok"} the VmRSS
// of its process tree is summed (the server and any children; there is no npm wrapper here). Every
// server is stopped by this script, and the whole run is bounded in time.
//
//   node bench/idle-memory.mjs [pg] [pglite-disk] [memory] [--runs N] [--idle-ms MS] [--smoke]
//
// --smoke (or BENCH_SMOKE=1): one run of each backend, 500 ms idle; without backends named, PGlite
// on disk and memory://, and PostgreSQL too when BENCH_PG_URL is set. Its databases are dropped.
// pg needs a PostgreSQL where BENCH_PG_URL's user may create databases (default
// postgres://postgres@127.0.0.1:5432/postgres); a fresh database is made for every run.
// pglite-disk measures the second start on a data dir (a restart): the first start creates it.
import { readFileSync, readdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { startSlaw, freshDb, dropFreshDbs, freePort, machine, smoke } from './lib.mjs'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { runs: { type: 'string', default: '3' }, 'idle-ms': { type: 'string', default: '10000' }, smoke: { type: 'boolean' } },
})
const runs = smoke ? 1 : Number(values.runs)
const idleMs = smoke ? 500 : Number(values['idle-ms'])
const backends = positionals.length ? positionals : smoke ? ['pglite-disk', 'memory', ...(process.env.BENCH_PG_URL ? ['pg'] : [])] : ['pg', 'pglite-disk', 'memory']
const port = await freePort()

// Nothing here may outlive a bounded run: a hung start or stop ends the script.
const deadline = setTimeout(
  () => {
    console.error(`idle-memory: took longer than ${smoke ? 2 : 10} minutes, giving up`)
    for (const child of live) child.kill('SIGKILL')
    process.exit(1)
  },
  (smoke ? 2 : 10) * 60_000,
)
deadline.unref()
const live = new Set()

function status(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (key) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(text)?.[1] ?? 0)
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') }
}

/** pid and all its descendants, read from /proc/<pid>/stat's ppid field. */
function tree(root) {
  const parents = new Map()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      parents.set(Number(entry), ppid)
    } catch {} // exited meanwhile
  }
  const pids = [root]
  for (let i = 0; i < pids.length; i++) for (const [pid, ppid] of parents) if (ppid === pids[i]) pids.push(pid)
  return pids
}

function treeRss(root) {
  const sum = { rss: 0, anon: 0, file: 0, processes: 0 }
  for (const pid of tree(root)) {
    try {
      const s = status(pid)
      sum.rss += s.rss
      sum.anon += s.anon
      sum.file += s.file
      sum.processes++
    } catch {}
  }
  return sum
}

async function measure(env) {
  // LOG_LEVEL as npm start has it (startSlaw defaults to warn).
  const server = await startSlaw({ port, env: { LOG_LEVEL: 'info', ...env } })
  live.add(server.child)
  try {
    await sleep(idleMs)
    return { ...treeRss(server.child.pid), startMs: Math.round(server.startMs) }
  } finally {
    await server.stop()
    live.delete(server.child)
  }
}

const mb = (kb) => (kb / 1024).toFixed(0)
console.log(`# idle memory, ${machine()}, ${new Date().toISOString()}, ${idleMs} ms after healthy`)
for (const backend of backends) {
  for (let run = 1; run <= runs; run++) {
    let result
    if (backend === 'pg') {
      const url = await freshDb(`slaw_idle_mem_${run}`)
      result = await measure({ DATABASE_URL: url })
    } else if (backend === 'pglite-disk') {
      const dir = mkdtempSync(join(tmpdir(), 'slaw-idle-'))
      try {
        const first = await startSlaw({ port, env: { SVC_DATA_DIR: dir } })
        live.add(first.child)
        await first.stop()
        live.delete(first.child)
        result = await measure({ SVC_DATA_DIR: dir })
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    } else if (backend === 'memory') {
      result = await measure({ SVC_DATA_DIR: 'memory://' })
    } else throw new Error(`unknown backend ${backend}`)
    console.log(`${backend}\trun ${run}\tRSS ${mb(result.rss)} MB\tanon ${mb(result.anon)} MB\tfile ${mb(result.file)} MB\tprocesses ${result.processes}\tstart ${result.startMs} ms`)
  }
}
if (smoke) await dropFreshDbs()
