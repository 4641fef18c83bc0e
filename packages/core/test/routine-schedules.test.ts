import t from 'tap'
import { activityOf } from './helpers/fixtures.js'
import { eachBackend, type TestApi } from './helpers/instance.js'
import { drain, runsOf, scheduled } from './helpers/routines.js'

/** The test clock: schedules are computed and claimed against it, so no test waits for real time. */
const clock = { now: new Date('2030-03-04T10:00:30Z') }
const at = (iso: string) => new Date(iso)

const opts = { now: () => clock.now, jobs: false as const }

eachBackend(
  t,
  'schedules: one fire per due time, next fire stored, issue and wake',
  async (t, api) => {
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
    t.match((await api.call('GET', `/api/issues/${issue.id}/runs`)).body.runs, [{ agentId, reason: 'routine' }], 'one heartbeat run for the assignee, with the routine reason')
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
  },
  opts,
)

eachBackend(
  t,
  'schedules: a node stopped over three due times follows the catch-up policy',
  async (t, api) => {
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
    t.same(
      skipRuns.map((r) => r.scheduledFor),
      ['2030-03-04T10:15:00.000Z'],
      'skip_missed: only the latest due time fires',
    )
    const missed = (await activityOf(api, squadId, `entityId=${skip.routine.id}`)).find((e: any) => e.action === 'routine.schedule_missed')
    t.equal(missed?.details.dropped, 2, 'the dropped due times are recorded')
    const capRuns = await runsOf(api, cap.routine.id)
    t.same(capRuns.map((r) => r.scheduledFor).sort(), ['2030-03-04T10:05:00.000Z', '2030-03-04T10:10:00.000Z', '2030-03-04T10:15:00.000Z'], 'enqueue_missed_with_cap: every missed due time')
    t.same(
      capRuns.map((r) => r.status),
      ['issue_created', 'issue_created', 'issue_created'],
    )
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
  },
  opts,
)

async function countRuns(api: TestApi, routineId: string): Promise<number> {
  return (await runsOf(api, routineId)).length
}
