// CPU per cost event: the server's own CPU time (user + system from /proc/<pid>/stat, its V8
// threads included) over a fixed number of POST /api/squads/:id/cost-events at 4 connections, on
// PostgreSQL, one agent, no budget. Less sensitive to the machine's speed drifting than latency is,
// so builds can be compared with SLAW_CLI (alternate them).
//
//   node bench/cost-event-cpu.mjs
//   SLAW_CLI=/path/to/other/checkout/packages/cli/dist/bin.cjs node bench/cost-event-cpu.mjs
//
// Needs the built CLI and a PostgreSQL where BENCH_PG_URL's user may create databases (a fresh
// `slaw_cpureq` is made). --smoke: 50 warm-up and 300 measured requests; its database dropped.
import autocannon from 'autocannon'
import { readFileSync } from 'node:fs'
import { costEventLoad, freshDb, dropFreshDbs, freePort, smoke, startSlaw } from './lib.mjs'
const cpu = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(f[11]) + Number(f[12])) * 10
}
const url = await freshDb('slaw_cpureq')
const server = await startSlaw({ port: await freePort(), env: { DATABASE_URL: url } })
try {
  const load = await costEventLoad(server.base, 4)
  const measured = smoke ? 300 : 15000
  await autocannon({ ...load, amount: smoke ? 50 : 4000 })
  const c0 = cpu(server.child.pid)
  const r = await autocannon({ ...load, amount: measured })
  const c1 = cpu(server.child.pid)
  console.log(`${((1000 * (c1 - c0)) / measured).toFixed(0)} µs CPU/request, ${r.requests.average} req/s, p50 ${r.latency.p50} p99 ${r.latency.p99}`)
} finally {
  await server.stop()
  if (smoke) await dropFreshDbs()
}
process.exit(0)
