// Where an embedded (PGlite) instance spends its database time: runs one scenario in process
// (app.inject, 10 at a time, 3,000 requests after 200 warm-up) and prints each statement's count and
// total time inside PGlite. A statement count per request shows batching at work.
//
//   node bench/pglite-statements.mjs [create|cost|comment|get] [--smoke]
//
// Runs the built packages (dist/, made by `npm install` or `npm run build`). Smoke mode: 20 warm-up
// and 100 measured requests.
import { createInstance } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { PGlite } from '@electric-sql/pglite'
import { processAdapter } from '@slaw/adapters'
import { smoke } from './lib.mjs'
const warmup = smoke ? 20 : 200
const total = smoke ? 100 : 3000
const stats = new Map()
const orig = PGlite.prototype.query
PGlite.prototype.query = async function (sql, params, opts) {
  const t0 = performance.now()
  try {
    return await orig.call(this, sql, params, opts)
  } finally {
    const k = sql.replace(/\s+/g, ' ').trim().slice(0, 70)
    const s = stats.get(k) ?? { n: 0, ms: 0 }
    s.n++
    s.ms += performance.now() - t0
    stats.set(k, s)
  }
}
const storage = await pgliteStorage({ dataDir: 'memory://' })
const op = 'slaw_op_x_aaaaaaaaaaaaaaaaaaaaaa'
const inst = await createInstance({ storage, operatorKey: op, logger: false, adapters: [processAdapter()] })
const H = { authorization: `Bearer ${op}`, 'content-type': 'application/json' }
const call = async (method, url, body) => JSON.parse((await inst.app.inject({ method, url, headers: H, payload: body && JSON.stringify(body) })).body)
const squad = (await call('POST', '/api/squads', { name: 'P' })).squad
const agent = (await call('POST', `/api/squads/${squad.id}/agents`, { name: 'a', role: 'r', adapterType: 'process' })).agent
const scenario = process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 'create'
const issue = (await call('POST', `/api/squads/${squad.id}/issues`, { title: 'x' })).issue
const req = {
  create: () => call('POST', `/api/squads/${squad.id}/issues`, { title: 'bench', description: 'by bench' }),
  cost: () => call('POST', `/api/squads/${squad.id}/cost-events`, { agentId: agent.id, model: 'claude-sonnet-4-5', inputTokens: 1200, cachedInputTokens: 0, outputTokens: 300, costCents: 2 }),
  comment: () => call('POST', `/api/issues/${issue.id}/comments`, { body: 'bench comment' }),
  get: () => call('GET', `/api/issues/${issue.id}`),
}[scenario]
if (!req) throw new Error(`unknown scenario ${scenario}; one of create, cost, comment, get`)
for (let i = 0; i < warmup; i++) await req()
stats.clear()
const t0 = performance.now()
let done = 0
await Promise.all(
  Array.from({ length: 10 }, async () => {
    while (done < total) {
      done++
      await req()
    }
  }),
)
const el = performance.now() - t0
console.log(`${scenario}: ${((total / el) * 1000).toFixed(0)} req/s in-process`)
let tot = 0
for (const [k, s] of [...stats].sort((a, b) => b[1].ms - a[1].ms)) {
  tot += s.ms
  console.log(s.n.toString().padStart(6), s.ms.toFixed(0).padStart(6), 'ms', (s.ms / s.n).toFixed(3), k)
}
console.log('total in PGlite', tot.toFixed(0), 'ms of', el.toFixed(0))
await inst.close()
