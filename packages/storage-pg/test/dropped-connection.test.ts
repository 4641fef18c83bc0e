import t from 'tap'
import postgres from 'postgres'
import { adminUrl, freshDatabase, serveInstance } from './helpers/instance-process.js'

// A PostgreSQL backend dying under a transaction (failover, pooler, pg_terminate_backend) must never
// take the process down: the request answers 503 database_unavailable and the instance keeps serving.

t.test('terminating every backend during a write burst: no crash, 2xx or 503, nothing acknowledged is lost', { skip: adminUrl ? false : 'set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.dispose())
  const { child, output, call } = await serveInstance(db.url)
  let exitCode: number | null | undefined
  let exitSignal: string | null = null
  child.once('exit', (code, signal) => {
    exitCode = code
    exitSignal = signal
  })
  t.teardown(() => {
    if (exitCode === undefined) child.kill('SIGKILL')
  })
  const squad = await call('POST', '/api/squads', { name: 'Drops' })
  t.equal(squad.status, 201)
  const squadId = squad.body.squad.id as string

  const killer = postgres(adminUrl!, { max: 1, onnotice: () => undefined })
  t.teardown(() => killer.end())
  const dbName = new URL(db.url).pathname.slice(1)
  let killed = 0
  const terminateAll = async () => {
    const rows = await killer`select pg_terminate_backend(pid) as ok from pg_stat_activity where datname = ${dbName} and pid <> pg_backend_pid()`
    killed += rows.length
  }

  // Three rounds of termination, each fired when the burst is in full flight (after the 1st, 15th
  // and 30th answer), so transactions are open on reserved connections when their backends die.
  const statuses: number[] = []
  const created: string[] = []
  const badBodies: unknown[] = []
  const kills: Promise<void>[] = []
  let answered = 0
  const one = async (i: number) => {
    let res
    try {
      res = await call('POST', `/api/squads/${squadId}/issues`, { title: `write ${i}` })
    } catch (err) {
      statuses.push(-1)
      return
    }
    statuses.push(res.status)
    if (res.status === 201) created.push(res.body.issue.id)
    else if (res.body?.code !== 'database_unavailable' || Object.keys(res.body).sort().join() !== 'code,error') badBodies.push(res.body)
    answered++
    if (answered === 1 || answered === 15 || answered === 30) kills.push(terminateAll())
  }
  await Promise.all(Array.from({ length: 50 }, (_, i) => one(i)))
  await Promise.all(kills)

  t.equal(exitCode, undefined, `the process is still up (exit ${exitCode} ${exitSignal}); output: ${output().slice(-2000)}`)
  t.ok(killed > 0, `backends were terminated (${killed})`)
  const bad = statuses.filter((s) => s !== 201 && s !== 503)
  t.same(bad, [], `every write answered 201 or 503 (got ${JSON.stringify(statuses)})`)
  t.same(badBodies, [], 'every failure is {error, code: database_unavailable}')

  // Keeps serving: the pool reconnects, and every acknowledged write is there.
  let after = await call('POST', `/api/squads/${squadId}/issues`, { title: 'after' })
  for (let i = 0; i < 5 && after.status === 503; i++) after = await call('POST', `/api/squads/${squadId}/issues`, { title: 'after' })
  t.equal(after.status, 201, 'a write after the faults succeeds')
  for (const id of created) {
    // A pooled connection whose backend was terminated is found out on use: that read answers 503
    // (as a request during the faults would) and the next one gets a fresh connection. A lost write
    // would answer 404 every time.
    let got = await call('GET', `/api/issues/${id}`)
    for (let i = 0; i < 5 && got.status === 503; i++) got = await call('GET', `/api/issues/${id}`)
    if (got.status !== 200) t.fail(`acknowledged issue ${id} is missing (${got.status})`)
  }
  t.pass(`${created.length} acknowledged writes all found`)
  child.kill('SIGTERM')
})
