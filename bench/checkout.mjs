#!/usr/bin/env node
// Checkout of distinct issues @50 against pgbench running bench/sql/checkout.sql on the same
// database (the foundation run's checkout scenario alone, ~1.5 min): `node bench/checkout.mjs`.
// Needs the built CLI (`npm install` builds it) and PostgreSQL at BENCH_PG_URL (see lib.mjs), pgbench
// on PATH. --smoke: 4 agents, 2,000 issues, 1 s each side; its database dropped.
import postgres from 'postgres'
import { checkoutVsPgbench, dropFreshDbs, freePort, freshDb, smoke, startSlaw } from './lib.mjs'
const duration = smoke ? 1 : 10
const clients = smoke ? 4 : 50
const url = await freshDb('slaw_checkout')
const slaw = await startSlaw({ port: await freePort(), env: { DATABASE_URL: url } })
const sql = postgres(url, { max: 2, onnotice: () => {} })
const { checkout, pgbench } = await checkoutVsPgbench({ base: slaw.base, sql, url, clients, count: smoke ? 2_000 : 200_000, duration })
console.log('checkout', checkout.rps, 'non2xx', checkout.non2xx, 'p99', checkout.p99, 'pgbench', pgbench.tps, 'ratio', (checkout.rps / pgbench.tps).toFixed(2))
await sql.end()
await slaw.stop()
if (smoke) await dropFreshDbs()
