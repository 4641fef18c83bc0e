// Where the cost-event tail is: autocannon's client-side latency next to slaw's own request
// duration (the `slaw_http_request_duration_seconds` histogram, read from /metrics before and after
// the run), POST /api/squads/:id/cost-events on PostgreSQL, one agent, no budget.
//
//   node bench/cost-event-tail.mjs            # 4 connections, 10 s (after a 3 s warm-up)
//   TAIL_CONNECTIONS=10 TAIL_SECONDS=15 SERVER_NODE_OPTIONS=--max-semi-space-size=64 node bench/cost-event-tail.mjs
//
// Needs the built CLI and a PostgreSQL where BENCH_PG_URL's user may create databases (a fresh
// `slaw_tail` is made). --smoke: 2 connections, 1 s after a 1 s warm-up; its database dropped.
import autocannon from 'autocannon'
import { costEventLoad, freshDb, dropFreshDbs, freePort, operatorKey, smoke, startSlaw } from './lib.mjs'

const connections = smoke ? 2 : Number(process.env.TAIL_CONNECTIONS ?? 4)
const duration = smoke ? 1 : Number(process.env.TAIL_SECONDS ?? 10)
const url = await freshDb('slaw_tail')
const server = await startSlaw({ port: await freePort(), env: { DATABASE_URL: url, ...(process.env.SERVER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.SERVER_NODE_OPTIONS } : {}) } })
try {
  const op = { authorization: `Bearer ${operatorKey}` }
  const load = await costEventLoad(server.base, connections)
  await autocannon({ ...load, duration: smoke ? 1 : 3 })
  const scrape = async () => {
    const text = await (await fetch(`${server.base}/metrics`, { headers: op })).text()
    const re = /slaw_http_request_duration_seconds_bucket\{le="([^"]+)",method="POST",route="\/api\/squads\/:squadId\/cost-events",status="201"\} (\d+)/g
    return Object.fromEntries([...text.matchAll(re)].map((m) => [m[1], Number(m[2])]))
  }
  const before = await scrape()
  const r = await autocannon({ ...load, duration })
  const after = await scrape()
  const total = after['+Inf'] - (before['+Inf'] ?? 0)
  const within = ['0.0025', '0.005', '0.01', '0.025'].map((le) => `≤ ${Number(le) * 1000} ms ${((100 * (after[le] - (before[le] ?? 0))) / total).toFixed(2)} %`)
  console.log(`client, ${connections} connections: ${r.requests.average} req/s, p50 ${r.latency.p50} ms, p97.5 ${r.latency.p97_5} ms, p99 ${r.latency.p99} ms, non-2xx ${r.non2xx}`)
  console.log(`server (${total} requests): ${within.join(', ')}`)
} finally {
  await server.stop()
  if (smoke) await dropFreshDbs()
}
process.exit(0)
