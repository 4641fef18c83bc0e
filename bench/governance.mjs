// Benchmarks for governance and money (issue #3). Not tests: figures go to bench/RESULTS.md.
//
//   node bench/governance.mjs [--smoke]
//
// Needs PostgreSQL at BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres; the script
// creates the database slaw_bench_governance) and pgbench on PATH. BENCH_DURATION seconds per run
// (default 10); BENCH_COST_EVENTS and BENCH_ISSUES change the seed; BENCH_REUSE=1 keeps an already
// seeded database. Takes about three minutes on 2 cores. Writes bench/raw/results-governance.json and
// prints a markdown table. --smoke: 1,000 issues, 5,000 cost events, 3 agents, 1 s per run; the
// database is dropped at the end.
//
// The instance runs `slaw start` from the TypeScript sources (through tsx), so no build is needed
// and the figures are always those of the code in the tree. It seeds, by SQL generate_series,
// 100,000 issues and 1,000,000 cost events (over the last 120 days) into one squad, fills the
// rollups the API keeps from the events themselves, and then measures:
//   - GET dashboard, costs/summary, costs/by-day, costs/by-model and budgets/overview of that squad
//     (latency at 4 and 50 connections);
//   - POST cost-events at 50 connections against pgbench running one INSERT plus one rollup UPDATE
//     per transaction on the same squad, in the same run.
import { execFileSync, spawn } from 'node:child_process'
import { join } from 'node:path'
import postgres from 'postgres'
import { api, load, machine, operatorKey, root, stop, waitHealthy, adminUrl, dbName, freshDb, dropFreshDbs, freePort, smoke, size, writeResult } from './lib.mjs'
import { bumpCounterSql, seedIssuesSql } from './seed.mjs'

const duration = size('BENCH_DURATION', 10, 1)
const costEvents = size('BENCH_COST_EVENTS', 1_000_000, 5_000)
const issues = size('BENCH_ISSUES', 100_000, 1_000)
const agentCount = smoke ? 3 : 20
const projectCount = smoke ? 2 : 5
const writers = smoke ? 4 : 50 // connections and pgbench clients of the write run
const results = { machine: machine(), date: new Date().toISOString(), duration, costEvents, issues, runs: {} }
const log = (...a) => console.log('[bench]', ...a)

/** A fresh database; with BENCH_REUSE=1 an existing one is kept (and its seeded squad reused). */
async function reusableDb(name) {
  if (process.env.BENCH_REUSE !== '1' || smoke) return freshDb(name)
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  const exists = (await admin`select 1 from pg_database where datname = ${dbName(name)}`).length > 0
  await admin.end()
  if (!exists) return freshDb(name)
  const u = new URL(adminUrl)
  u.pathname = `/${dbName(name)}`
  return u.toString()
}

/** `slaw start` from the sources, in its own process. */
async function startFromSource(port, env) {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=slaw-source', join(root, 'packages/cli/src/bin.ts'), 'start', '--port', String(port)], {
    cwd: root,
    env: { ...process.env, SVC_OPERATOR_KEY: operatorKey, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const base = `http://127.0.0.1:${port}`
  await waitHealthy(base, 120_000, child)
  return { child, base, stop: () => stop(child) }
}

function pgbench(url, script, vars, clients = writers) {
  const args = ['-n', '-c', String(clients), '-j', '2', '-T', String(duration), '-f', join(root, 'bench/sql', script), ...Object.entries(vars).flatMap(([k, v]) => ['-D', `${k}=${v}`]), url]
  const out = execFileSync('pgbench', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  return { tps: Math.round(Number(/tps = ([\d.]+)/.exec(out)?.[1])), failed: Number(/number of failed transactions: (\d+)/.exec(out)?.[1] ?? 0) }
}

/** 1,000,000 cost events over the last 120 days, for the squad's agents, a tenth on issues. */
function seedCostEventsSql({ squadId, count, agentIds, projectIds }) {
  const agents = `array[${agentIds.map((a) => `'${a}'::uuid`).join(',')}]`
  const projects = `array[${projectIds.map((p) => `'${p}'::uuid`).join(',')}]`
  return `
    insert into cost_events (id, squad_id, agent_id, issue_id, project_id, provider, billing_type, model, input_tokens, cached_input_tokens, output_tokens, cost_cents, occurred_at)
    select gen_random_uuid(), '${squadId}', (${agents})[1 + g % ${agentIds.length}],
           case when g % 10 = 0 then i.ids[1 + (g / 10) % array_length(i.ids, 1)] end,
           case when g % 10 = 0 then (${projects})[1 + (g / 10) % ${projectIds.length}] end,
           (array['anthropic','openai','google','anthropic'])[1 + g % 4],
           case when g % 5 = 0 then 'subscription_included' else 'metered_api' end,
           (array['claude-sonnet-4-5','gpt-5','gemini-2.5-pro','claude-haiku-4'])[1 + g % 4],
           1000 + g % 5000, g % 300, 100 + g % 900, case when g % 5 = 0 then 0 else 1 + g % 40 end,
           now() - (random() * interval '120 days')
      from generate_series(1, ${count}) g,
           (select array_agg(id) as ids from (select id from issues where squad_id = '${squadId}' limit 5000) s) i`
}

/** The rollups the API keeps, rebuilt from the events (what every POST cost-events maintains). */
function rollupsFromEventsSql(squadId) {
  const sums = `sum(cost_cents), sum(input_tokens), sum(cached_input_tokens), sum(output_tokens),
    sum(case when billing_type <> 'metered_api' then input_tokens + cached_input_tokens + output_tokens else 0 end), count(*)`
  const month = `to_char(occurred_at at time zone 'UTC', 'YYYY-MM')`
  return `
    insert into cost_rollups (squad_id, period, scope, scope_key, cost_cents, input_tokens, cached_input_tokens, output_tokens, subscription_tokens, events)
    select squad_id, ${month}, 'squad', '', ${sums} from cost_events where squad_id = '${squadId}' group by squad_id, ${month}
    union all
    select squad_id, ${month}, 'agent', agent_id::text, ${sums} from cost_events where squad_id = '${squadId}' group by squad_id, ${month}, agent_id
    union all
    select squad_id, ${month}, 'provider', provider, ${sums} from cost_events where squad_id = '${squadId}' group by squad_id, ${month}, provider
    union all
    select squad_id, 'all', 'project', project_id::text, ${sums} from cost_events where squad_id = '${squadId}' and project_id is not null group by squad_id, project_id`
}

/** The day-and-model rollup (cost_day_rollups), rebuilt from the events as migration 0015 does. */
function dayRollupsFromEventsSql(squadId) {
  return `
    insert into cost_day_rollups (squad_id, day, provider, model, billing_type, cost_cents, input_tokens, cached_input_tokens, output_tokens,
                                  subscription_tokens, events, cache_write_tokens, unpriced_tokens)
    select squad_id, (occurred_at at time zone 'UTC')::date, provider, model, billing_type,
           sum(cost_cents), sum(input_tokens), sum(cached_input_tokens), sum(output_tokens),
           sum(case when billing_type <> 'metered_api' or cost_status = 'unpriced' then input_tokens + cached_input_tokens + output_tokens else 0 end),
           count(*), sum(cache_write_tokens),
           sum(case when cost_status = 'unpriced' then input_tokens + cached_input_tokens + cache_write_tokens + output_tokens else 0 end)
      from cost_events where squad_id = '${squadId}' group by 1, 2, 3, 4, 5`
}

async function reads(label, base, squadId, connections) {
  const paths = {
    dashboard: `/api/squads/${squadId}/dashboard`,
    'costs/summary': `/api/squads/${squadId}/costs/summary`,
    'costs/by-day': `/api/squads/${squadId}/costs/by-day`,
    'costs/by-model': `/api/squads/${squadId}/costs/by-model`,
    'budgets/overview': `/api/squads/${squadId}/budgets/overview`,
  }
  for (const [name, path] of Object.entries(paths)) {
    const r = await load({ url: `${base}${path}`, headers: { authorization: `Bearer ${operatorKey}` }, connections, duration })
    results.runs[`${label}: GET ${name} @${connections}`] = r
    log(label, name, `@${connections}`, 'p50', r.p50, 'p99', r.p99, 'rps', r.rps, 'non2xx', r.non2xx)
  }
}

// ---------------------------------------------------------------------------------------------
const url = await reusableDb('slaw_bench_governance')
const slaw = await startFromSource(await freePort(), { DATABASE_URL: url })
const sql = postgres(url, { max: 2, onnotice: () => {} })
try {
  const seeded = (await api(slaw.base, 'GET', '/api/squads')).squads.find((x) => x.slug === 'governed')
  const squad = seeded ?? (await seedGoverned())
  const month = new Date().toISOString().slice(0, 7)
  const [{ n }] = await sql`select count(*)::int as n from cost_events where squad_id = ${squad.id} and occurred_at >= date_trunc('month', now() at time zone 'UTC') at time zone 'UTC'`
  const check = await api(slaw.base, 'GET', `/api/squads/${squad.id}/costs/summary`)
  const byDay = (await api(slaw.base, 'GET', `/api/squads/${squad.id}/costs/by-day`)).days.reduce((sum, d) => sum + d.events, 0)
  log('month events per summary', check.summary.events, 'per by-day', byDay, 'per scan', n)
  results.seed = { monthEvents: n, summaryMatchesScan: check.summary.events === n, byDayMatchesScan: byDay === n, reused: Boolean(seeded) }

  await reads('PostgreSQL', slaw.base, squad.id, smoke ? 2 : 4)
  await reads('PostgreSQL', slaw.base, squad.id, smoke ? 4 : 50)

  // Writes: POST cost-events vs pgbench of one INSERT plus one rollup UPDATE, same squad shape.
  const writes = (await api(slaw.base, 'POST', '/api/squads', { name: 'Writes' })).squad
  const writer = (await api(slaw.base, 'POST', `/api/squads/${writes.id}/agents`, { name: 'writer', role: 'general', adapterType: 'process' })).agent
  const post = await load({
    url: `${slaw.base}/api/squads/${writes.id}/cost-events`,
    method: 'POST',
    duration,
    connections: writers,
    headers: { authorization: `Bearer ${operatorKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agentId: writer.id, model: 'gpt-5', inputTokens: 1000, outputTokens: 100, costCents: 1 }),
  })
  const pgbSquad = (await api(slaw.base, 'POST', '/api/squads', { name: 'Pgbench Writes' })).squad
  const pgbAgent = (await api(slaw.base, 'POST', `/api/squads/${pgbSquad.id}/agents`, { name: 'writer', role: 'general', adapterType: 'process' })).agent
  await sql`insert into cost_rollups (squad_id, period, scope, scope_key) values (${pgbSquad.id}, ${month}, 'squad', '')`
  const pg = pgbench(url, 'cost-event.sql', { squad: `'${pgbSquad.id}'`, agent: `'${pgbAgent.id}'`, period: `'${month}'` })
  results.runs[`PostgreSQL: POST cost-events @${writers}`] = { slaw: post, pgbench: pg, ratio: +(post.rps / pg.tps).toFixed(2) }
  log('POST cost-events', post.rps, 'non2xx', post.non2xx, 'vs pgbench', pg.tps)
} finally {
  await sql.end()
  await slaw.stop()
  if (smoke) await dropFreshDbs()
}

/** A squad with budgets everywhere: squad (with a hard stop), 20 agents, 5 projects; issues and cost events by SQL. */
async function seedGoverned() {
  const { squad } = await api(slaw.base, 'POST', '/api/squads', { name: 'Governed', slug: 'governed' })
  const agentIds = []
  for (let i = 0; i < agentCount; i++) {
    const { agent } = await api(slaw.base, 'POST', `/api/squads/${squad.id}/agents`, { name: `agent-${String(i).padStart(2, '0')}`, role: 'general', adapterType: 'process' })
    agentIds.push(agent.id)
  }
  const projectIds = []
  for (let i = 0; i < projectCount; i++) projectIds.push((await api(slaw.base, 'POST', `/api/squads/${squad.id}/projects`, { name: `project-${i}` })).project.id)
  for (let i = 0; i < Math.min(10, agentCount); i++)
    await api(slaw.base, 'POST', `/api/squads/${squad.id}/approvals`, { type: 'request_board_approval', requestedByAgentId: agentIds[i], payload: { title: `ask ${i}`, summary: 'bench' } })

  log(`seeding ${issues} issues and ${costEvents} cost events by SQL`)
  let t0 = Date.now()
  await sql.unsafe(seedIssuesSql({ squadId: squad.id, prefix: squad.issuePrefix, count: issues }))
  await sql.unsafe(bumpCounterSql(squad.id, issues))
  log('issues seeded in', Date.now() - t0, 'ms')
  t0 = Date.now()
  await sql.unsafe(seedCostEventsSql({ squadId: squad.id, count: costEvents, agentIds, projectIds }))
  await sql.unsafe(rollupsFromEventsSql(squad.id))
  await sql.unsafe(dayRollupsFromEventsSql(squad.id))
  // One seeding transaction updated the same counter rows 100,000 times; compact them as the
  // many small transactions of real use (HOT-pruned page by page) would have kept them.
  await sql.unsafe('vacuum full issue_status_counts, cost_rollups')
  await sql.unsafe('vacuum analyze')
  log('cost events and rollups seeded in', Date.now() - t0, 'ms')

  // Budgets set through the API, so incidents and pauses follow from the seeded spend.
  const month = new Date().toISOString().slice(0, 7)
  const [{ spent }] = await sql`select cost_cents as spent from cost_rollups where squad_id = ${squad.id} and period = ${month} and scope = 'squad'`
  await api(slaw.base, 'PATCH', `/api/squads/${squad.id}/budgets`, { budgetMonthlyCents: Number(spent) * 2, budgetHardStop: true, budgetMonthlyTokens: 1_000_000_000 })
  for (const [i, id] of agentIds.entries()) await api(slaw.base, 'PATCH', `/api/agents/${id}/budgets`, { budgetMonthlyCents: i % 4 === 0 ? 1_000 : 10_000_000 })
  for (const id of projectIds) await api(slaw.base, 'PATCH', `/api/projects/${id}`, { budgetCents: 100_000_000 })
  return squad
}

log('wrote', writeResult('results-governance.json', results))

// The results as a markdown table (bench/RESULTS.md keeps the current one by hand).
console.log(
  `\n${results.date.slice(0, 10)}, ${results.machine}, ${duration} s per run; ${issues.toLocaleString('en')} issues and ${costEvents.toLocaleString('en')} cost events (${results.seed.monthEvents.toLocaleString('en')} this month; summary equals a scan: ${results.seed.summaryMatchesScan})`,
)
console.log('Targets: dashboard, costs/summary, costs/by-day, costs/by-model and budgets/overview p50 < 10 ms and p99 < 40 ms; POST cost-events ≥ 0.50 of pgbench.\n')
console.log('| Run | Result | |\n|---|---|---|')
for (const [name, r] of Object.entries(results.runs)) {
  console.log(
    'slaw' in r
      ? `| ${name} | ${r.slaw.rps} req/s (p50 ${r.slaw.p50} ms, p99 ${r.slaw.p99} ms, non-2xx ${r.slaw.non2xx}) vs pgbench ${r.pgbench.tps} tps | ratio ${r.ratio} |`
      : `| ${name} | p50 ${r.p50} ms, p99 ${r.p99} ms | ${r.rps} req/s, non-2xx ${r.non2xx} |`,
  )
}
