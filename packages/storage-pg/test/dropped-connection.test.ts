import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'

// A PostgreSQL backend dying under a transaction (failover, pooler, pg_terminate_backend) must never
// take the process down: the request answers 503 database_unavailable and the instance keeps serving.
const adminUrl = process.env.SLAW_TEST_DATABASE_URL
const operator = 'slaw_op_dropped_connection_test_0001'
const fixture = new URL('./fixtures/serve-instance.ts', import.meta.url).pathname

async function freshDatabase(): Promise<{ url: string; dispose(): Promise<void> }> {
  const name = `slaw_t_${randomBytes(6).toString('hex')}`
  const admin = postgres(adminUrl!, { max: 1, onnotice: () => undefined })
  await admin.unsafe(`create database ${name}`)
  await admin.end()
  const url = new URL(adminUrl!)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async dispose() {
      const a = postgres(adminUrl!, { max: 1, onnotice: () => undefined })
      await a.unsafe(`drop database if exists ${name} with (force)`)
      await a.end()
    },
  }
}

/** Starts the fixture; resolves with its address once it listens. `output()` is all it printed. */
function serve(url: string): Promise<{ child: ChildProcess; base: string; output: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=slaw-source', fixture], {
    env: { ...process.env, DATABASE_URL: url, SVC_OPERATOR_KEY: operator, POOL_MAX: '10' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (c) => (out += c))
    child.stdout!.on('data', (c) => {
      out += c
      const m = /listening (\S+)/.exec(out)
      if (m) resolve({ child, base: m[1]!, output: () => out })
    })
    child.once('exit', (code) => reject(new Error(`instance exited (${code}) before listening: ${out}`)))
  })
}

t.test('terminating every backend during a write burst: no crash, 2xx or 503, nothing acknowledged is lost', { skip: adminUrl ? false : 'set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.dispose())
  const { child, base, output } = await serve(db.url)
  let exitCode: number | null | undefined
  let exitSignal: string | null = null
  child.once('exit', (code, signal) => {
    exitCode = code
    exitSignal = signal
  })
  t.teardown(() => {
    if (exitCode === undefined) child.kill('SIGKILL')
  })
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${operator}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    })
    return { status: res.status, body: (await res.json()) as any }
  }
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
    const got = await call('GET', `/api/issues/${id}`)
    if (got.status !== 200) t.fail(`acknowledged issue ${id} is missing (${got.status})`)
  }
  t.pass(`${created.length} acknowledged writes all found`)
  child.kill('SIGTERM')
})
