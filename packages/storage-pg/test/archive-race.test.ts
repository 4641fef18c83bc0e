import t from 'tap'
import postgres from 'postgres'
import { adminUrl, freshDatabase, serveInstance } from './helpers/instance-process.js'

// Two instances (two processes) on one PostgreSQL database. Writes to a squad (issues, comments,
// cost events) race its archiving: none may be accepted for the archived squad. A deferred
// constraint trigger, installed by the test only, looks at the squad at each writer's COMMIT and
// records a violation when the squad was already archived by then.

t.test('no issue, comment or cost event lands in an archived squad (two processes)', { skip: adminUrl ? false : 'set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const database = await freshDatabase()
  const a = await serveInstance(database.url)
  t.teardown(async () => {
    a.child.kill('SIGKILL')
    b.child.kill('SIGKILL')
    await db.end()
    await database.dispose()
  })
  const b = await serveInstance(database.url)
  const db = postgres(database.url, { max: 1, onnotice: () => undefined })
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

  const statuses: Record<string, number[]> = { issue: [], comment: [], cost: [] }
  for (let round = 0; round < 6; round++) {
    const created = await a.call('POST', '/api/squads', { name: `Race ${round}` })
    if (created.status !== 201) throw new Error(JSON.stringify(created))
    const squad = created.body.squad
    const agent = (await a.call('POST', `/api/squads/${squad.id}/agents`, { name: 'al', role: 'software_engineer', adapterType: 'process' })).body.agent
    const issue = (await a.call('POST', `/api/squads/${squad.id}/issues`, { title: 'base' })).body.issue
    const write = (i: number) => {
      const node = i % 2 ? a : b
      const kind = (['issue', 'comment', 'cost'] as const)[i % 3]!
      const req =
        kind === 'issue'
          ? node.call('POST', `/api/squads/${squad.id}/issues`, { title: `w${i}` })
          : kind === 'comment'
            ? node.call('POST', `/api/issues/${issue.id}/comments`, { body: `c${i}` })
            : node.call('POST', `/api/squads/${squad.id}/cost-events`, { agentId: agent.id, model: 'gpt-x', inputTokens: 1, outputTokens: 1, costCents: 1 })
      return req.then((r) => ({ kind, status: r.status }))
    }
    // One write of each kind lands first, whatever the machine's speed: the race below then runs
    // against a squad with work in it, and each kind is seen both landing and refused.
    for (const r of await Promise.all([0, 1, 2].map(write))) t.equal(r.status, 201, `${r.kind} before the archive`)
    const writes: Array<Promise<unknown>> = []
    for (let i = 3; i < 27; i++) {
      writes.push(write(i).then((r) => statuses[r.kind]!.push(r.status)))
      if (i === 11) writes.push(b.call('POST', `/api/squads/${squad.id}/archive`).then((r) => t.equal(r.status, 200, 'archived')))
    }
    await Promise.all(writes)
    // After the archive, every write is refused.
    for (const r of await Promise.all([27, 28, 29].map(write))) t.equal(r.status, 409, `${r.kind} after the archive`)
  }
  for (const [kind, list] of Object.entries(statuses)) {
    t.same(
      list.filter((s) => s !== 201 && s !== 409),
      [],
      `${kind}: every racing write answered 201 or 409 squad_archived`,
    )
  }
  const violations = await db`select tbl, row_id from race_violations`
  t.same([...violations], [], 'no write committed after its squad was archived')
})
