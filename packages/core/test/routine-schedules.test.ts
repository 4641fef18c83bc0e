import t from 'tap'
import { createInstance, type SlawInstance } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'
import { activityOf } from './helpers/fixtures.js'
import { backends, freshDatabase, testDatabaseUrl } from './helpers/backends.js'
import { eachBackend, makeApi, operatorToken, testAdapters, type TestApi } from './helpers/instance.js'

/** The test clock: schedules are computed and claimed against it, so no test waits for real time. */
const clock = { now: new Date('2030-03-04T10:00:30Z') }
const at = (iso: string) => new Date(iso)

/** Runs the queued routine jobs on this node, the way the job runner would. */
async function drain(instance: SlawInstance, worker = 'test-worker'): Promise<number> {
  let n = 0
  for (;;) {
    const jobs = await instance.storage.jobs.claim(['routine_run'], worker, 60_000, 50)
    if (!jobs.length) return n
    for (const job of jobs) {
      const result = await instance.services.routines.runJob(job)
      await instance.storage.jobs.complete(job.id, worker, result)
      n++
    }
  }
}

async function scheduled(api: TestApi, squadId: string, routine: Record<string, unknown>, cronExpression: string, timezone = 'UTC') {
  const r = await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'Scheduled', ...routine })
  if (r.status !== 201) throw new Error(JSON.stringify(r.body))
  const trig = await api.call('POST', `/api/routines/${r.body.routine.id}/triggers`, { kind: 'schedule', cronExpression, timezone })
  if (trig.status !== 201) throw new Error(JSON.stringify(trig.body))
  return { routine: r.body.routine, trigger: trig.body.trigger }
}

const runsOf = async (api: TestApi, routineId: string) => (await api.call('GET', `/api/routines/${routineId}/runs`)).body.runs as any[]
const opts = { now: () => clock.now, jobs: false as const }

eachBackend(t, 'schedules: one fire per due time, next fire stored, issue and wake', async (t, api) => {
  clock.now = at('2030-03-04T10:00:30Z')
  const { squadId, agentId } = await api.seed()
  const { routine, trigger } = await scheduled(api, squadId, { title: 'Sweep {{zone}}', assigneeAgentId: agentId, variables: [{ name: 'zone', defaultValue: 'eu' }] }, '*/5 * * * *')
  t.equal(trigger.nextFireAt, '2030-03-04T10:05:00.000Z')
  const svc = api.instance.services.routines

  t.equal(await svc.tickSchedules(at('2030-03-04T10:04:59Z')), 0, 'not due yet')
  t.equal(await svc.tickSchedules(at('2030-03-04T10:05:00Z')), 1, 'due')
  t.equal(await svc.tickSchedules(at('2030-03-04T10:05:00Z')), 0, 'the same due time never fires twice')
  t.equal(await svc.tickSchedules(at('2030-03-04T10:06:00Z')), 0)
  const queued = await runsOf(api, routine.id)
  t.equal(queued.length, 1)
  t.equal(queued[0].status, 'queued')
  t.equal(await drain(api.instance), 1)
  const [run] = await runsOf(api, routine.id)
  t.equal(run.status, 'issue_created')
  t.equal(run.source, 'schedule')
  t.equal(run.scheduledFor, '2030-03-04T10:05:00.000Z')
  t.equal(run.triggerId, trigger.id)
  const issue = (await api.call('GET', `/api/issues/${run.issueId}`)).body.issue
  t.equal(issue.title, 'Sweep eu')
  t.equal(issue.assigneeAgentId, agentId)
  t.ok((await api.instance.storage.wakeups.listQueued(agentId)).some((w) => w.issueId === issue.id && w.reason === 'routine'), 'wake queued')
  const detail = await api.call('GET', `/api/routines/${routine.id}`)
  t.equal(detail.body.triggers[0].nextFireAt, '2030-03-04T10:10:00.000Z', 'next due time advanced')
  t.equal(await drain(api.instance), 0, 'a job runs once')

  // Paused: nothing fires, and resuming counts from now (nothing missed while paused is caught up).
  await api.call('PATCH', `/api/routines/${routine.id}`, { status: 'paused' })
  t.equal(await svc.tickSchedules(at('2030-03-04T10:31:00Z')), 0, 'paused does not fire')
  clock.now = at('2030-03-04T10:31:00Z')
  const resumed = await api.call('PATCH', `/api/routines/${routine.id}`, { status: 'active' })
  t.equal(resumed.body.triggers[0].nextFireAt, '2030-03-04T10:35:00.000Z')
  t.equal(await svc.tickSchedules(at('2030-03-04T10:34:00Z')), 0)
  // A run queued before an archive never creates an issue.
  t.equal(await svc.tickSchedules(at('2030-03-04T10:35:00Z')), 1)
  await api.call('PATCH', `/api/routines/${routine.id}`, { status: 'archived' })
  await drain(api.instance)
  const runs = await runsOf(api, routine.id)
  t.equal(runs[0].status, 'failed')
  t.match(runs[0].error, /archived/)
  t.equal(runs.filter((r) => r.status === 'issue_created').length, 1)
  t.equal(await svc.tickSchedules(at('2030-03-04T12:00:00Z')), 0, 'archived never fires')
}, opts)

eachBackend(t, 'schedules: a node stopped over three due times follows the catch-up policy', async (t, api) => {
  clock.now = at('2030-03-04T10:00:30Z')
  const { squadId } = await api.seed()
  const svc = api.instance.services.routines
  const skip = await scheduled(api, squadId, { concurrencyPolicy: 'always_enqueue' }, '*/5 * * * *')
  const cap = await scheduled(api, squadId, { concurrencyPolicy: 'always_enqueue', catchUpPolicy: 'enqueue_missed_with_cap' }, '*/5 * * * *')
  const capCoalesce = await scheduled(api, squadId, { catchUpPolicy: 'enqueue_missed_with_cap' }, '*/5 * * * *')

  // Nothing ticked at 10:05, 10:10 or 10:15; the node comes back at 10:17.
  t.equal(await svc.tickSchedules(at('2030-03-04T10:17:00Z')), 1 + 3 + 3)
  await drain(api.instance)
  const skipRuns = await runsOf(api, skip.routine.id)
  t.same(skipRuns.map((r) => r.scheduledFor), ['2030-03-04T10:15:00.000Z'], 'skip_missed: only the latest due time fires')
  const missed = (await activityOf(api, squadId, `entityId=${skip.routine.id}`)).find((e: any) => e.action === 'routine.schedule_missed')
  t.equal(missed?.details.dropped, 2, 'the dropped due times are recorded')
  const capRuns = await runsOf(api, cap.routine.id)
  t.same(capRuns.map((r) => r.scheduledFor).sort(), ['2030-03-04T10:05:00.000Z', '2030-03-04T10:10:00.000Z', '2030-03-04T10:15:00.000Z'], 'enqueue_missed_with_cap: every missed due time')
  t.same(capRuns.map((r) => r.status), ['issue_created', 'issue_created', 'issue_created'])
  // With coalesce_if_active the first catch-up run makes the issue and the others coalesce into it.
  const co = await runsOf(api, capCoalesce.routine.id)
  t.same(co.map((r) => r.status).sort(), ['coalesced', 'coalesced', 'issue_created'])
  t.equal(await svc.tickSchedules(at('2030-03-04T10:17:00Z')), 0, 'caught up once')
  t.equal((await api.call('GET', `/api/routines/${skip.routine.id}`)).body.triggers[0].nextFireAt, '2030-03-04T10:20:00.000Z')

  // Thirty missed due times: the cap is 25, the most recent ones.
  clock.now = at('2030-03-04T11:00:30Z')
  const minutely = await scheduled(api, squadId, { concurrencyPolicy: 'skip_if_active', catchUpPolicy: 'enqueue_missed_with_cap' }, '* * * * *')
  await svc.tickSchedules(at('2030-03-04T11:30:10Z'))
  t.equal(await countRuns(api, minutely.routine.id), 25)
  const times = (await runsOf(api, minutely.routine.id)).map((r) => r.scheduledFor).sort()
  t.equal(times[0], '2030-03-04T11:06:00.000Z')
  t.equal(times[24], '2030-03-04T11:30:00.000Z')
}, opts)

async function countRuns(api: TestApi, routineId: string): Promise<number> {
  return (await runsOf(api, routineId)).length
}

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
