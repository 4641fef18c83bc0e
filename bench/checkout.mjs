#!/usr/bin/env node
// Checkout of distinct issues @50 against pgbench running bench/sql/checkout.sql on the same
// database (the foundation run's checkout scenario alone, ~1.5 min): `node bench/checkout.mjs`.
// Needs the built CLI (`npm install` builds it) and PostgreSQL at BENCH_PG_URL (see lib.mjs), pgbench
// on PATH. --smoke: 4 agents, 2,000 issues, 1 s each side; its database dropped.
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import postgres from 'postgres'
import { api, load, operatorKey, root, startSlaw, freshDb, dropFreshDbs, freePort, smoke } from './lib.mjs'
import { seedIssuesSql, bumpCounterSql } from './seed.mjs'
const duration = smoke ? 1 : 10
const clients = smoke ? 4 : 50
const url = await freshDb('slaw_checkout')
const slaw = await startSlaw({ port: await freePort(), env: { DATABASE_URL: url } })
const sql = postgres(url, { max: 2, onnotice: () => {} })
const coSquad = (await api(slaw.base, 'POST', '/api/squads', { name: 'Checkout' })).squad
const agents = []
for (let i = 0; i < clients; i++) agents.push((await api(slaw.base, 'POST', `/api/squads/${coSquad.id}/agents`, { name: `co-${i}`, role: 'general', adapterType: 'process' })).agent.id)
const coCount = smoke ? 2_000 : 200_000
await sql.unsafe(seedIssuesSql({ squadId: coSquad.id, prefix: coSquad.issuePrefix, count: coCount, status: 'todo' }))
await sql.unsafe(bumpCounterSql(coSquad.id, coCount))
const ids = (await sql`select id from issues where squad_id = ${coSquad.id} and number <= ${coCount / 2} order by number`).map((r) => r.id)
let next = 0
const checkout = await load({
  url: slaw.base,
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
const args = [
  '-n',
  '-M',
  'extended',
  '-c',
  String(clients),
  '-j',
  '2',
  '-T',
  String(duration),
  '-f',
  join(root, 'bench/sql', 'checkout.sql'),
  '-D',
  `squad=${coSquad.id}`,
  '-D',
  `count=${coCount}`,
  url,
]
const out = execFileSync('pgbench', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
const tps = Number(/tps = ([\d.]+)/.exec(out)?.[1])
console.log('checkout', checkout.rps, 'non2xx', checkout.non2xx, 'p99', checkout.p99, 'pgbench', Math.round(tps), 'ratio', (checkout.rps / tps).toFixed(2))
await sql.end()
await slaw.stop()
if (smoke) await dropFreshDbs()
