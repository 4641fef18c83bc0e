import t from 'tap'
import { queueWake, uuidv7, type TowerClient } from '@slaw/core'
import { eachBackend } from './helpers/instance.js'
import { activityOf, addAgent, isError } from './helpers/fixtures.js'
import { steeredAdapter } from './helpers/runs.js'
import { addTrigger, fire } from './helpers/routines.js'

// Regression tests of the security review: X-Svc-Run-Id forgery and the tower gate on public fires
// and runs. Each attack goes through the HTTP API and fails (docs/security.md).

eachBackend(t, "audit (LOW): an agent key stamps only its own runs; another agent's run id is a 403", async (t, api) => {
  const s = await api.seed('Forgery')
  const victim = await addAgent(api, s.squadId, 'victim')
  const runOf = async (agentId: string) => (await api.instance.storage.transaction((tx) => queueWake(tx, { squadId: s.squadId, agentId, issueId: null, reason: 'manual' }))).run.id
  const victimRun = await runOf(victim.id)
  const ownRun = await runOf(s.agentId)
  const before = (await api.call('GET', `/api/squads/${s.squadId}/issues`)).body.issues.length
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'forged' }, s.agentToken, { 'x-svc-run-id': victimRun }), 403, 'forbidden', "another agent's run")
  const elsewhere = await api.seed('Elsewhere')
  const foreignRun = (await api.instance.storage.transaction((tx) => queueWake(tx, { squadId: elsewhere.squadId, agentId: elsewhere.agentId, issueId: null, reason: 'manual' }))).run.id
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'forged' }, s.agentToken, { 'x-svc-run-id': foreignRun }), 403, 'forbidden', "another squad's run")
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'forged' }, s.agentToken, { 'x-svc-run-id': uuidv7() }), 403, 'forbidden', 'a run that does not exist')
  t.equal((await api.call('GET', `/api/squads/${s.squadId}/issues`)).body.issues.length, before, 'nothing was written')
  t.same(await api.instance.storage.heartbeatRuns.touchedIssues(victimRun), [], "the victim's run touched no issue")
  const own = await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'traced' }, s.agentToken, { 'x-svc-run-id': ownRun })
  t.equal(own.status, 201, 'its own run is accepted')
  const [entry] = await activityOf(api, s.squadId, `entityId=${own.body.issue.id}`)
  t.equal(entry.runId, ownRun)
})

let gated = false
let gateAdapter = steeredAdapter('process')
const gateClient: TowerClient = {
  name: 'gate-test',
  start: async () => undefined,
  close: async () => undefined,
  gate: () => (gated ? { code: 'instance_not_enrolled', message: 'This instance is not enrolled with its control tower.' } : undefined),
}

eachBackend(
  t,
  'tower gate (LOW): a gated instance creates no issue from a public fire and wakes no agent',
  async (t, api) => {
    gated = false
    const adapter = gateAdapter
    const { squadId, agentId } = await api.seed('Gated')
    const routine = (await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'Hook', assigneeAgentId: agentId, concurrencyPolicy: 'always_enqueue' })).body.routine
    const hook = await addTrigger(api, routine.id, { kind: 'api' })
    await addTrigger(api, routine.id, { kind: 'schedule', cronExpression: '0 * * * *' })
    const issue = (await api.call('POST', `/api/squads/${squadId}/issues`, { title: 'work', assigneeAgentId: agentId })).body.issue
    t.ok(issue, 'an assigned issue queued a wake')

    gated = true
    isError(t, await api.call('GET', `/api/squads/${squadId}`), 403, 'instance_not_enrolled', 'the API is gated')
    isError(t, await fire(api, hook.trigger.fireUrl, '{}', { authorization: `Bearer ${hook.secret}` }), 403, 'instance_not_enrolled', 'so is the public fire URL')
    t.same(await api.instance.storage.routines.listRuns(routine.id, { limit: 10 }), [], 'no run, no issue')
    const later = new Date(Date.now() + 2 * 3_600_000)
    t.equal(await api.instance.services.routines.tickSchedules(later), 0, 'the scheduler claims nothing, though a schedule is due')
    const jobs = await api.instance.storage.jobs.claim(['heartbeat_run'], 'test', 60_000, 10)
    t.equal(jobs.length, 1)
    await api.instance.services.runs.engine.runJob(jobs[0]!, { signal: new AbortController().signal })
    t.equal(adapter.calls.length, 0, 'the adapter was never called')
    const [run] = await api.instance.storage.heartbeatRuns.listForIssue(issue.id, 10)
    t.match(run, { status: 'cancelled', error: /instance_not_enrolled/ })

    gated = false
    t.equal((await fire(api, hook.trigger.fireUrl, '{}', { authorization: `Bearer ${hook.secret}` })).status, 201, 'once enrolled, fires work again')
    t.equal(await api.instance.services.routines.tickSchedules(later), 1, 'and the due schedule fires')
  },
  () => {
    gateAdapter = steeredAdapter('process')
    return { tower: gateClient, jobs: false, adapters: [gateAdapter] }
  },
)
