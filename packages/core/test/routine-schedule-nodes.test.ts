import t from 'tap'
import { backends, testDatabaseUrl } from './helpers/backends.js'
import { makeApi } from './helpers/instance.js'
import { drain, runsOf, scheduled, twoPgNodes } from './helpers/routines.js'

/** The test clock: schedules are computed and claimed against it, so no test waits for real time. */
const clock = { now: new Date('2030-03-04T10:00:30Z') }
const at = (iso: string) => new Date(iso)

const pg = backends.find((b) => b.name === 'postgres')!
t.test('schedules: two nodes on one PostgreSQL database fire each due time once', pg.skip ? { skip: pg.skip } : {}, async (t) => {
  const nodes = await twoPgNodes(t, clock)
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
  t.equal(
    counts.reduce((a, b) => a + b, 0),
    expected,
    `${expected} runs queued in all, whichever node queued them`,
  )
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
