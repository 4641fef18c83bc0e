// Live events across nodes (docs/events.md): two nodes (processes) on one PostgreSQL database,
// from this checkout's sources.
//   1. latency: writes on node A (POST an issue), each timed until node B's subscriber has its
//      event: from the write's response (the commit is acknowledged) and from its request; first one
//      write at a time, then 8 writers at once (transactions committing out of order).
//   2. memory: node B's RSS and heap (after a full GC) before and with 1,000 idle streams open.
//
//   node bench/events.mjs [--smoke]      (BENCH_PG_URL: a server where the user may create databases)
//
// --smoke: 30 writes, 100 streams, seconds. Results: bench/raw/events.json (smoke: the temp dir).
import { spawn, spawnSync } from 'node:child_process'
import { request } from 'node:http'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

if (!process.execArgv.some((a) => a.includes('slaw-source'))) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--conditions=slaw-source', fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' })
  process.exit(r.status ?? 1)
}

const { api, dropFreshDbs, freePort, freshDb, machine, operatorKey, root, size, smoke, writeResult } = await import('./lib.mjs')

const writes = size('BENCH_EVENT_WRITES', 300, 30)
const streams = size('BENCH_EVENT_STREAMS', 1000, 100)
const deadline = setTimeout(
  () => {
    console.error('events: took too long, giving up')
    for (const c of children) c.kill('SIGKILL')
    process.exit(1)
  },
  (smoke ? 2 : 10) * 60_000,
)
deadline.unref()
const children = []

async function startNode(url) {
  const port = await freePort()
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', '--conditions=slaw-source', join(root, 'bench/events-node.mjs'), url, String(port), operatorKey], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    children.push(child)
    child.once('message', (m) => resolve({ child, base: m.address }))
    child.once('exit', (code) => reject(new Error(`a node exited (${code})`)))
  })
}
const memory = (child) => new Promise((resolve) => (child.once('message', resolve), child.send('memory')))

/** Opens an SSE stream; `onEvent(id, data)` for each message. */
function openStream(base, path, onEvent) {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { headers: { authorization: `Bearer ${operatorKey}`, accept: 'text/event-stream' }, agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`))
      let buffer = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => {
        if (!onEvent) return
        buffer += chunk
        let cut
        while ((cut = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, cut)
          buffer = buffer.slice(cut + 2)
          const data = /^data: (.*)$/m.exec(block)?.[1]
          if (data) onEvent(JSON.parse(data))
        }
      })
      resolve({ close: () => (req.destroy(), res.destroy()) })
    })
    req.on('error', reject)
    req.end()
  })
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)]
const summary = (list) => {
  const s = [...list].sort((a, b) => a - b)
  return { n: s.length, p50: +pct(s, 0.5).toFixed(2), p99: +pct(s, 0.99).toFixed(2), max: +s[s.length - 1].toFixed(2) }
}

const url = await freshDb('slaw_bench_events')
try {
  const [a, b] = await Promise.all([startNode(url), startNode(url)])
  const squad = (await api(a.base, 'POST', '/api/squads', { name: 'Events bench' })).squad

  // 1. Latency.
  const arrived = new Map()
  const waiting = new Map()
  const stream = await openStream(b.base, `/api/squads/${squad.id}/events?types=issue.created`, (e) => {
    arrived.set(e.entityId, performance.now())
    waiting.get(e.entityId)?.()
  })
  const seen = (id) => (arrived.has(id) ? Promise.resolve() : new Promise((r) => waiting.set(id, r)))
  const write = async (i) => {
    const sent = performance.now()
    const { issue } = await api(a.base, 'POST', `/api/squads/${squad.id}/issues`, { title: `bench ${i}` })
    const acked = performance.now()
    await seen(issue.id)
    const at = arrived.get(issue.id)
    return { fromCommit: Math.max(0, at - acked), fromRequest: at - sent }
  }
  for (let i = 0; i < 10; i++) await write(`warm ${i}`)
  const sequential = []
  for (let i = 0; i < writes; i++) sequential.push(await write(i))
  const concurrent = []
  let next = 0
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < writes) concurrent.push(await write(`c${next++}`))
    }),
  )
  stream.close()

  // 2. Memory of idle streams on node B.
  await new Promise((r) => setTimeout(r, 500))
  const before = await memory(b.child)
  const open = []
  for (let i = 0; i < streams; i++) open.push(await openStream(b.base, `/api/squads/${squad.id}/events`))
  await new Promise((r) => setTimeout(r, 1000))
  const after = await memory(b.child)
  for (const s of open) s.close()
  const per1000 = (key) => +(((after[key] - before[key]) / 2 ** 20) * (1000 / streams)).toFixed(1)

  const result = {
    machine: machine(),
    smoke,
    latencyMs: {
      sequential: { fromCommit: summary(sequential.map((x) => x.fromCommit)), fromRequest: summary(sequential.map((x) => x.fromRequest)) },
      eightWriters: { fromCommit: summary(concurrent.map((x) => x.fromCommit)), fromRequest: summary(concurrent.map((x) => x.fromRequest)) },
    },
    memory: { streams, rssMbPer1000: per1000('rss'), heapMbPer1000: per1000('heapUsed'), rssMbBefore: +(before.rss / 2 ** 20).toFixed(1), rssMbWith: +(after.rss / 2 ** 20).toFixed(1) },
  }
  console.log(JSON.stringify(result, null, 2))
  console.log(`events: wrote ${writeResult('events.json', result)}`)
  for (const c of children) c.send('close')
} finally {
  await new Promise((r) => setTimeout(r, 500))
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
  if (smoke) await dropFreshDbs()
}
