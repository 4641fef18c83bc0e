// Tower ingest of full batches (issue #4): 5,000 facts and 2,000 upserts per batch, gzip, on
// PostgreSQL; first one instance sending batches back to back (latency per batch), then four at once
// (facts stored per second). Not a test: figures go to bench/RESULTS.md.
//
//   node bench/tower-ingest.mjs [--smoke]     (the built @slaw/tower; PostgreSQL at BENCH_PG_URL)
//
// BENCH_BATCHES batches per sender (default 8). Writes bench/raw/results-tower-ingest.json. --smoke:
// one batch per sender of 200 facts and 100 upserts; its database dropped.
import { gzipSync } from 'node:zlib'
import { randomUUID } from 'node:crypto'
import { createTower } from '@slaw/tower'
import { machine, freshDb, dropFreshDbs, size, smoke, writeResult } from './lib.mjs'

const batchesPerSender = size('BENCH_BATCHES', 8, 1)
const factCount = smoke ? 200 : 5000
const upsertCount = smoke ? 100 : 2000

const url = await freshDb('slaw_bench_tower')

const tower = await createTower({ databaseUrl: url, adminKey: 'bench-admin-key-000000', autoApprove: true, rateLimit: false, logger: false })
const base = await tower.listen({ port: 0, host: '127.0.0.1' })

async function enroll(i) {
  const res = await fetch(`${base}/api/ingest/v1/enroll`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      protocolVersion: 1,
      instance: { machineId: `bench-machine-${i}-0000`, instanceId: `bench-${i}`, hostname: `bench-${i}`, os: 'linux', slawVersion: '0.1.0' },
      capabilities: { reportIssueTitles: true, liveStream: false },
    }),
  })
  const body = await res.json()
  if (!body.apiKey) throw new Error(`enroll: ${res.status} ${JSON.stringify(body)}`)
  return body.apiKey
}

function batch(cursor) {
  const squad = randomUUID()
  const now = new Date().toISOString()
  const upserts = Array.from({ length: upsertCount }, (_, i) => ({
    type: 'issue',
    localId: randomUUID(),
    squadLocalId: squad,
    projectLocalId: null,
    title: `issue ${i}`,
    status: 'todo',
    assigneeAgentLocalId: null,
    updatedAt: now,
  }))
  const facts = Array.from({ length: factCount }, (_, i) => ({
    type: 'cost_event',
    localId: randomUUID(),
    squadLocalId: squad,
    provider: 'anthropic',
    billingType: 'metered_api',
    model: 'claude',
    inputTokens: 100 + i,
    cachedInputTokens: 0,
    outputTokens: 50,
    costCents: 3,
    occurredAt: now,
  }))
  return gzipSync(JSON.stringify({ protocolVersion: 1, sentAt: now, batchCursor: String(cursor).padStart(20, '0'), upserts, facts }))
}

async function send(apiKey, body) {
  const t0 = performance.now()
  const res = await fetch(`${base}/api/ingest/v1/sync`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'content-encoding': 'gzip' }, body })
  const out = await res.json()
  if (res.status !== 200 || out.accepted.facts !== factCount) throw new Error(`sync: ${res.status} ${JSON.stringify(out).slice(0, 300)}`)
  return performance.now() - t0
}

const keys = await Promise.all([0, 1, 2, 3].map(enroll))
// Bodies are made before timing: the figure is the tower's work, not the sender's.
const bodies = keys.map(() => Array.from({ length: batchesPerSender }, (_, i) => batch(i + 1)))

const single = []
for (const body of bodies[0]) single.push(await send(keys[0], body))
single.sort((a, b) => a - b)

const extra = keys.map(() => Array.from({ length: batchesPerSender }, (_, i) => batch(batchesPerSender + i + 1)))
const t0 = performance.now()
const four = (
  await Promise.all(
    keys.map(async (key, k) => {
      const ms = []
      for (const body of extra[k]) ms.push(await send(key, body))
      return ms
    }),
  )
).flat()
const seconds = (performance.now() - t0) / 1000
four.sort((a, b) => a - b)
const factsPerSecond = Math.round((4 * batchesPerSender * factCount) / seconds)

const results = {
  machine: machine(),
  date: new Date().toISOString(),
  batchesPerSender,
  oneSender: { p50Ms: Math.round(single[Math.floor(single.length / 2)]), maxMs: Math.round(single[single.length - 1]) },
  fourSenders: { p50Ms: Math.round(four[Math.floor(four.length / 2)]), maxMs: Math.round(four[four.length - 1]), factsPerSecond },
}
console.log(results)
console.log('written', writeResult('results-tower-ingest.json', results))
await tower.close()
if (smoke) await dropFreshDbs()
