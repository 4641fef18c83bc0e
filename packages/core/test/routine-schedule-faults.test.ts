import t from 'tap'
import { eachBackend } from './helpers/instance.js'
import { drain, runsOf, scheduled } from './helpers/routines.js'

/** The test clock: schedules are computed and claimed against it, so no test waits for real time. */
const clock = { now: new Date('2030-03-04T10:00:30Z') }
const at = (iso: string) => new Date(iso)

const opts = { now: () => clock.now, jobs: false as const }

eachBackend(
  t,
  'schedules: a refused schedule run is recorded as failed, with the reason',
  async (t, api) => {
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
  },
  opts,
)

eachBackend(
  t,
  'schedules: time zones and DST transitions',
  async (t, api) => {
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
  },
  opts,
)
