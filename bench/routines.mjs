// Benchmarks for routines (issue #10). Not tests: figures go to bench/RESULTS.md.
//
//   node bench/routines.mjs [--smoke]
//
// Needs PostgreSQL at BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres; the script
// creates slaw_bench_routines). Writes bench/raw/results-routines.json. --smoke: 2 squads, 1 s of
// fires, 50 schedules due a second after seeding instead of at the next minute; database dropped. Nodes run from the TypeScript sources (bench/routines-node.mjs
// through tsx), each in its own process. Measures:
//   1. webhook fire to issue committed: POST /api/routine-triggers/public/{publicId}/fire (bearer)
//      at 10 connections for BENCH_DURATION seconds (default 10); the answer comes after the commit
//      of the run, its issue, activity, outbox and the assignee's wake, so its latency is fire-to-commit.
//   2. BENCH_SCHEDULES (default 10,000) active schedules due in the same minute, two nodes: the time
//      from the due time until every run has created its issue, and duplicates counted three ways
//      (runs per trigger and due time, issues per run, job attempts).
import { fork } from 'node:child_process'
import { join } from 'node:path'
import postgres from 'postgres'
import { api, load, machine, operatorKey, root, stop, freshDb, dropFreshDbs, size, smoke, writeResult } from './lib.mjs'

const duration = size('BENCH_DURATION', 10, 1)
const schedules = size('BENCH_SCHEDULES', 10_000, 50)
const squadCount = smoke ? 2 : 20 // squads the schedules are spread over (part 1 uses up to 10)
const masterKey = 'a'.repeat(64)
const log = (...a) => console.log('[bench]', ...a)
const results = { machine: machine(), date: new Date().toISOString(), duration, schedules }

// Forked nodes die with this script, also when it is interrupted or killed by a timeout: an
// orphan would go on claiming jobs in the next run's database of the same name.
const children = new Set()
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL')
})
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130))

function startNode(url) {
  return new Promise((resolve, reject) => {
    const child = fork(join(root, 'bench/routines-node.mjs'), [], {
      cwd: root,
      execArgv: ['--import', 'tsx', '--conditions=slaw-source'],
      env: { ...process.env, DATABASE_URL: url, PORT: '0', SVC_OPERATOR_KEY: operatorKey, SVC_MASTER_KEY: masterKey },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    })
    children.add(child)
    child.once('exit', () => children.delete(child))
    child.once('message', (m) => resolve({ child, base: m.address, stop: () => stop(child) }))
    child.once('exit', (code) => reject(new Error(`node exited ${code}`)))
  })
}

async function seedSquad(base, i) {
  const squad = (await api(base, 'POST', '/api/squads', { name: `Bench ${i}` })).squad
  const agent = (await api(base, 'POST', `/api/squads/${squad.id}/agents`, { name: 'worker', role: 'software_engineer', adapterType: 'process' })).agent
  return { squadId: squad.id, agentId: agent.id }
}

// 1. Webhook fire to issue committed ----------------------------------------------------------------
// Once against one trigger (every fire serialises on its squad's issue counter), once spread over
// ten triggers in ten squads (independent webhooks, the usual case).
{
  const url = await freshDb('slaw_bench_routines')
  const node = await startNode(url)
  const targets = []
  for (let i = 0; i < Math.min(10, squadCount); i++) {
    const { squadId, agentId } = await seedSquad(node.base, i)
    const { routine } = await api(node.base, 'POST', `/api/squads/${squadId}/routines`, {
      title: 'Deploy {{service}}',
      assigneeAgentId: agentId,
      concurrencyPolicy: 'always_enqueue',
      variables: [{ name: 'service', defaultValue: 'web' }],
    })
    const { trigger, secret } = await api(node.base, 'POST', `/api/routines/${routine.id}/triggers`, { kind: 'webhook' })
    targets.push({ path: trigger.fireUrl, secret })
  }
  const body = JSON.stringify({ service: 'billing', ref: 'refs/heads/main' })
  for (const [name, spread] of [
    ['oneTrigger', 1],
    ['tenSquads', targets.length],
  ]) {
    log(`webhook fire @10, ${name}, for`, duration, 's')
    let n = 0
    const r = await load({
      url: node.base,
      connections: 10,
      duration,
      requests: [
        {
          method: 'POST',
          setupRequest: (req) => {
            const t = targets[n++ % spread]
            return { ...req, path: t.path, body, headers: { authorization: `Bearer ${t.secret}`, 'content-type': 'application/json' } }
          },
        },
      ],
    })
    results[`webhook_${name}`] = r
    log(name, r)
  }
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const [{ runs, issues }] = await sql`select (select count(*)::int from routine_runs where status = 'issue_created') as runs, (select count(*)::int from issues) as issues`
  await sql.end()
  results.webhookTotals = { runs, issues }
  log('webhook totals', results.webhookTotals)
  await node.stop()
}

// 2. 10,000 schedules due in the same minute, two nodes --------------------------------------------
{
  const url = await freshDb('slaw_bench_routines')
  const first = await startNode(url)
  const squads = []
  for (let i = 0; i < squadCount; i++) squads.push(await seedSquad(first.base, i))
  await first.stop()
  const sql = postgres(url, { max: 2, onnotice: () => {} })
  // Due at the start of a minute at least 20 s away: every trigger fires then, and next a day later.
  // (Smoke: a second from now, not on a minute: the nodes find it overdue when they start.)
  const due = smoke ? new Date(Date.now() + 1_000) : new Date(Math.ceil((Date.now() + 20_000) / 60_000) * 60_000)
  const cron = `${due.getUTCMinutes()} ${due.getUTCHours()} * * *`
  log(`seeding ${schedules} schedules due at ${due.toISOString()} (${cron} UTC)`)
  await sql`create temporary table bench_squads (n int, squad_id uuid, agent_id uuid)`
  for (const [n, s] of squads.entries()) await sql`insert into bench_squads values (${n}, ${s.squadId}, ${s.agentId})`
  await sql`
    insert into routines (id, squad_id, title, assignee_agent_id, concurrency_policy, revision_id, revision_number)
    select gen_random_uuid(), s.squad_id, 'Nightly ' || g, s.agent_id, 'always_enqueue', gen_random_uuid(), 1
      from generate_series(1, ${schedules}) g join bench_squads s on s.n = g % ${squads.length}`
  await sql`
    insert into routine_triggers (id, squad_id, routine_id, kind, enabled, cron_expression, timezone, next_fire_at)
    select gen_random_uuid(), r.squad_id, r.id, 'schedule', true, ${cron}, 'UTC', ${due} from routines r`
  const nodes = [await startNode(url), await startNode(url)]
  log('two nodes up; waiting for the due time')
  let doneAt = null
  let last = 0
  for (;;) {
    await new Promise((r) => setTimeout(r, 250))
    const [{ created }] = await sql`select count(*)::int as created from routine_runs where status <> 'queued'`
    if (created !== last) last = created
    if (created >= schedules) {
      doneAt = Date.now()
      break
    }
    if (Date.now() - due.getTime() > (smoke ? 60_000 : 180_000)) break
  }
  const [counts] = await sql`
    select (select count(*)::int from routine_runs) as runs,
           (select count(*)::int from routine_runs where status = 'issue_created') as issue_runs,
           (select count(*)::int from (select trigger_id, scheduled_for from routine_runs group by 1, 2 having count(*) > 1) d) as twice,
           (select count(*)::int from issues) as issues,
           (select count(*)::int from jobs where kind = 'routine_run' and attempts > 1) as retried,
           (select count(distinct locked_by)::int from jobs where kind = 'routine_run') as workers,
           (select max(finished_at) from routine_runs) as last_finished,
           (select max(created_at) from routine_runs) as last_claimed`
  const perNode = await sql`select locked_by as worker, count(*)::int as jobs, sum(jsonb_array_length(payload->'routineRunIds'))::int as runs from jobs where kind = 'routine_run' group by 1`
  results.schedules = {
    ...counts,
    secondsAfterDue: doneAt ? (doneAt - due.getTime()) / 1000 : null,
    lastRunFinishedSecondsAfterDue: counts.last_finished ? (new Date(counts.last_finished).getTime() - due.getTime()) / 1000 : null,
    allClaimedSecondsAfterDue: counts.last_claimed ? (new Date(counts.last_claimed).getTime() - due.getTime()) / 1000 : null,
    perNode: perNode.map((r) => ({ jobs: r.jobs, runs: r.runs })),
  }
  log('schedules', results.schedules)
  await sql.end()
  for (const n of nodes) await n.stop()
}

if (smoke) await dropFreshDbs()
log('written to', writeResult('results-routines.json', results))
if (smoke && results.schedules.secondsAfterDue === null) throw new Error('the schedules did not all create their issue within 60 s')
