import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'

// Two instances (two processes) on one PostgreSQL database. Writes to a squad (issues, comments,
// cost events) race its archiving: none may be accepted for the archived squad. A deferred
// constraint trigger, installed by the test only, looks at the squad at each writer's COMMIT and
// records a violation when the squad was already archived by then.
const adminUrl = process.env.SLAW_TEST_DATABASE_URL
const operator = 'slaw_op_archive_race_test_key_0001'
const fixture = new URL('./fixtures/serve-instance.ts', import.meta.url).pathname

function serve(url: string): Promise<{ child: ChildProcess; base: string }> {
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
      if (m) resolve({ child, base: m[1]! })
    })
    child.once('exit', (code) => reject(new Error(`instance exited (${code}) before listening: ${out}`)))
  })
}

t.test('no issue, comment or cost event lands in an archived squad (two processes)', { skip: adminUrl ? false : 'set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const name = `slaw_t_${randomBytes(6).toString('hex')}`
  const admin = postgres(adminUrl!, { max: 1, onnotice: () => undefined })
  await admin.unsafe(`create database ${name}`)
  const url = new URL(adminUrl!)
  url.pathname = `/${name}`
  const a = await serve(url.toString())
  t.teardown(async () => {
    a.child.kill('SIGKILL')
    b.child.kill('SIGKILL')
    await db.end()
    await admin.unsafe(`drop database if exists ${name} with (force)`)
    await admin.end()
  })
  const b = await serve(url.toString())
  const db = postgres(url.toString(), { max: 1, onnotice: () => undefined })
  await db.unsafe(`
    create table race_violations (tbl text, row_id uuid);
    create function race_check() returns trigger language plpgsql as $$
    begin
      if (select status from squads where id = new.squad_id) = 'archived' then
        insert into race_violations values (tg_table_name, new.id);
      end if;
      return null;
    end $$;
    create constraint trigger race_issues after insert on issues deferrable initially deferred for each row execute function race_check();
    create constraint trigger race_comments after insert on comments deferrable initially deferred for each row execute function race_check();
    create constraint trigger race_costs after insert on cost_events deferrable initially deferred for each row execute function race_check();
  `)

  const call = async (base: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${operator}`, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body: JSON.stringify(body) } : {}) })
    return { status: res.status, body: (await res.json()) as any }
  }
  const statuses: Record<string, number[]> = { issue: [], comment: [], cost: [] }
  for (let round = 0; round < 6; round++) {
    const created = await call(a.base, 'POST', '/api/squads', { name: `Race ${round}` })
    if (created.status !== 201) throw new Error(JSON.stringify(created))
    const squad = created.body.squad
    const agent = (await call(a.base, 'POST', `/api/squads/${squad.id}/agents`, { name: 'al', role: 'software_engineer', adapterType: 'process' })).body.agent
    const issue = (await call(a.base, 'POST', `/api/squads/${squad.id}/issues`, { title: 'base' })).body.issue
    const writes: Array<Promise<unknown>> = []
    for (let i = 0; i < 24; i++) {
      const node = i % 2 ? a.base : b.base
      const kind = (['issue', 'comment', 'cost'] as const)[i % 3]!
      const req =
        kind === 'issue' ? call(node, 'POST', `/api/squads/${squad.id}/issues`, { title: `w${i}` })
        : kind === 'comment' ? call(node, 'POST', `/api/issues/${issue.id}/comments`, { body: `c${i}` })
        : call(node, 'POST', `/api/squads/${squad.id}/cost-events`, { agentId: agent.id, model: 'gpt-x', inputTokens: 1, outputTokens: 1, costCents: 1 })
      writes.push(req.then((r) => statuses[kind]!.push(r.status)))
      if (i === 8) writes.push(call(b.base, 'POST', `/api/squads/${squad.id}/archive`).then((r) => t.equal(r.status, 200, 'archived')))
    }
    await Promise.all(writes)
    // After the archive, every write is refused.
    t.equal((await call(a.base, 'POST', `/api/issues/${issue.id}/comments`, { body: 'late' })).status, 409)
  }
  for (const [kind, list] of Object.entries(statuses)) {
    t.same(list.filter((s) => s !== 201 && s !== 409), [], `${kind}: every write answered 201 or 409 squad_archived`)
    t.ok(list.includes(201) && list.includes(409), `${kind}: some writes landed before the archive and some were refused (${list.join(',')})`)
  }
  const violations = await db`select tbl, row_id from race_violations`
  t.same([...violations], [], 'no write committed after its squad was archived')
})
