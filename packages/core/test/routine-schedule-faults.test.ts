import t from 'tap'
import { createInstance, type SlawInstance } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'
import { backends, freshDatabase, testDatabaseUrl } from './helpers/backends.js'
import { eachBackend, makeApi, operatorToken, testAdapters } from './helpers/instance.js'
import { drain, runsOf, scheduled } from './helpers/routines.js'

/** The test clock: schedules are computed and claimed against it, so no test waits for real time. */
const clock = { now: new Date('2030-03-04T10:00:30Z') }
const at = (iso: string) => new Date(iso)

const opts = { now: () => clock.now, jobs: false as const }

eachBackend(t, 'schedules: a refused schedule run is recorded as failed, with the reason', async (t, api) => {
  clock.now = at('2030-03-04T10:00:30Z')
  const { squadId } = await api.seed()
  const svc = api.instance.services.routines
  const needs = await scheduled(api, squadId, { title: 'Needs {{what}}', variables: [{ name: 'what' }] }, '0 * * * *')
  const long = await scheduled(api, squadId, { title: `${'x'.repeat(190)}{{tail}}`, variables: [{ name: 'tail', defaultValue: 'y'.repeat(20) }] }, '0 * * * *')
  t.equal(await svc.tickSchedules(at('2030-03-04T11:00:00Z')), 2)
  await drain(api.instance)
  const [a] = await runsOf(api, needs.routine.id)
  t.equal(a.status, 'failed')
  t.match(a.error, /what.*required/)
  const [b] = await runsOf(api, long.routine.id)
  t.equal(b.status, 'failed')
  t.match(b.error, /at most 200/)
  t.equal((await api.call('GET', `/api/squads/${squadId}/issues`)).body.issues.length, 0, 'no issue')
}, opts)

eachBackend(t, 'schedules: time zones and DST transitions', async (t, api) => {
  clock.now = at('2030-03-30T12:00:00Z')
  const { squadId } = await api.seed()
  const svc = api.instance.services.routines
  // 02:30 does not exist in Berlin on 2030-03-31 (clocks jump from 02:00 to 03:00); 01:30 in New York
  // happens twice on 2030-11-03. Each still fires once a day.
  const berlin = await scheduled(api, squadId, { concurrencyPolicy: 'always_enqueue', catchUpPolicy: 'enqueue_missed_with_cap' }, '30 2 * * *', 'Europe/Berlin')
  t.equal(berlin.trigger.nextFireAt.slice(0, 10), '2030-03-31')
  t.equal(await svc.tickSchedules(at('2030-04-02T12:00:00Z')), 3, 'one fire each for 31 March, 1 and 2 April')
  const times = (await runsOf(api, berlin.routine.id)).map((r) => r.scheduledFor).sort()
  t.same(times, ['2030-03-31T01:30:00.000Z', '2030-04-01T00:30:00.000Z', '2030-04-02T00:30:00.000Z'], 'the skipped 02:30 fires once at 03:30 local, then summer time')
  await api.call('PATCH', `/api/routines/${berlin.routine.id}`, { status: 'archived' })
  clock.now = at('2030-11-02T12:00:00Z')
  const ny = await scheduled(api, squadId, { concurrencyPolicy: 'always_enqueue', catchUpPolicy: 'enqueue_missed_with_cap' }, '30 1 * * *', 'America/New_York')
  t.equal(await svc.tickSchedules(at('2030-11-04T12:00:00Z')), 2, 'the repeated hour fires once')
  t.same((await runsOf(api, ny.routine.id)).map((r) => r.scheduledFor).sort(), ['2030-11-03T05:30:00.000Z', '2030-11-04T06:30:00.000Z'])
}, opts)

const pg = backends.find((b) => b.name === 'postgres')!
t.test('schedules: two nodes on one PostgreSQL database fire each due time once', pg.skip ? { skip: pg.skip } : {}, async (t) => {
  const db = await freshDatabase()
  const nodes: SlawInstance[] = []
  for (let i = 0; i < 2; i++) {
    nodes.push(await createInstance({ storage: pgStorage({ url: db.url, max: 4 }), operatorKey: operatorToken, adapters: testAdapters, logger: false, jobs: false, now: () => clock.now }))
  }
  t.teardown(async () => {
    for (const n of nodes) await n.close()
    await db.dispose()
  })
  clock.now = at('2030-03-04T10:00:30Z')
  const api = await makeApi(nodes[0]!, 'postgres')
  const { squadId } = await api.seed()
  const routineIds: string[] = []
  for (let i = 0; i < 12; i++) {
    const { routine } = await scheduled(api, squadId, { title: `R${i}`, concurrencyPolicy: 'always_enqueue', catchUpPolicy: i % 2 ? 'enqueue_missed_with_cap' : 'skip_missed' }, '*/5 * * * *')
    routineIds.push(routine.id)
  }
  // Both nodes tick the same instants, several times over, concurrently (10:05, 10:10 and 10:15 all due at 10:15).
  const instant = at('2030-03-04T10:15:00Z')
  const counts = await Promise.all([...nodes, ...nodes, ...nodes].map((n) => n.services.routines.tickSchedules(instant, 5)))
  const expected = 6 * 1 + 6 * 3
  t.equal(counts.reduce((a, b) => a + b, 0), expected, `${expected} runs queued in all, whichever node queued them`)
  const drained = await Promise.all(nodes.map((n, i) => drain(n, `node-${i}`)))
  t.equal(drained[0]! + drained[1]!, expected, 'each job ran once')
  let issues = 0
  for (const id of routineIds) {
    const runs = await runsOf(api, id)
    const due = runs.map((r) => r.scheduledFor)
    t.equal(new Set(due).size, due.length, 'no due time twice')
    issues += runs.filter((r) => r.status === 'issue_created').length
  }
  t.equal(issues, expected)
  t.equal((await api.call('GET', `/api/squads/${squadId}/issues?limit=200`)).body.issues.length, expected, 'one issue per fire')
})

if (!testDatabaseUrl) t.comment('two-node schedule test needs SLAW_TEST_DATABASE_URL')
