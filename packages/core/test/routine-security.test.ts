import t from 'tap'
import { createHmac } from 'node:crypto'
import { routineLimitsFromEnv } from '@slaw/core'
import { eachBackend } from './helpers/instance.js'
import { addAgent, isError } from './helpers/fixtures.js'
import { addTrigger, fire } from './helpers/routines.js'

// Regression tests of the security review of routines and triggers: replays, changes by agent keys,
// quotas. Each attack goes through the HTTP API and fails (docs/security.md).

eachBackend(t, 'replay (MEDIUM): a captured signed fire stays one run whatever unsigned headers say', async (t, api) => {
  const { squadId } = await api.seed('Replays')
  const routine = (await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'On push', concurrencyPolicy: 'always_enqueue' })).body.routine
  const runs = async () => (await api.call('GET', `/api/routines/${routine.id}/runs`)).body.runs as any[]

  const hmac = await addTrigger(api, routine.id, { kind: 'webhook', signingMode: 'hmac_sha256', replayWindowSec: 300 })
  const body = JSON.stringify({ ref: 'main' })
  const ts = Math.floor(Date.now() / 1000).toString()
  const signed = { 'x-slaw-timestamp': ts, 'x-slaw-signature': `sha256=${createHmac('sha256', hmac.secret!).update(`${ts}.${body}`).digest('hex')}` }
  const first = await fire(api, hmac.trigger.fireUrl, body, signed)
  t.equal(first.status, 201)
  for (const key of ['replay-1', 'replay-2']) {
    const again = await fire(api, hmac.trigger.fireUrl, body, { ...signed, 'idempotency-key': key })
    t.equal(again.status, 200, `a new Idempotency-Key (${key}) does not make a new run`)
    t.equal(again.body.run.id, first.body.run.id)
  }
  const upper = await fire(api, hmac.trigger.fireUrl, body, { ...signed, 'x-slaw-signature': signed['x-slaw-signature'].toUpperCase().replace('SHA256=', 'sha256=') })
  t.equal(upper.body.run.id, first.body.run.id, 'nor does the same signature in upper case')
  t.equal((await runs()).length, 1)
  // A signed idempotencyKey in the body still names the run, under any new timestamp.
  const keyed = JSON.stringify({ ref: 'dev', idempotencyKey: 'deploy-7' })
  const sign = (at: string) => ({ 'x-slaw-timestamp': at, 'x-slaw-signature': `sha256=${createHmac('sha256', hmac.secret!).update(`${at}.${keyed}`).digest('hex')}` })
  const k1 = await fire(api, hmac.trigger.fireUrl, keyed, sign(ts))
  const k2 = await fire(api, hmac.trigger.fireUrl, keyed, sign(String(Number(ts) + 1)))
  t.equal(k1.status, 201)
  t.equal(k2.status, 200)
  t.equal(k2.body.run.id, k1.body.run.id)

  const vcs = await addTrigger(api, routine.id, { kind: 'webhook', signingMode: 'vcs_hmac' })
  const push = JSON.stringify({ after: 'abc123' })
  const hub = { 'x-hub-signature-256': `sha256=${createHmac('sha256', vcs.secret!).update(push).digest('hex')}` }
  const d1 = await fire(api, vcs.trigger.fireUrl, push, { ...hub, 'x-github-delivery': 'd-1' })
  t.equal(d1.status, 201)
  for (const headers of [{ ...hub, 'x-github-delivery': 'd-2' }, hub, { ...hub, 'idempotency-key': 'x' }]) {
    const again = await fire(api, vcs.trigger.fireUrl, push, headers)
    t.equal(again.status, 200, 'a changed or dropped X-GitHub-Delivery replays the same run')
    t.equal(again.body.run.id, d1.body.run.id)
  }
  const other = JSON.stringify({ after: 'def456' })
  t.equal(
    (await fire(api, vcs.trigger.fireUrl, other, { 'x-hub-signature-256': `sha256=${createHmac('sha256', vcs.secret!).update(other).digest('hex')}` })).status,
    201,
    'another delivery is another run',
  )
  t.equal((await runs()).length, 4)

  // Bearer signs nothing about the request: there the header still names the run.
  const bearer = await addTrigger(api, routine.id, { kind: 'api' })
  const auth = { authorization: `Bearer ${bearer.secret}` }
  t.equal((await fire(api, bearer.trigger.fireUrl, '{}', { ...auth, 'idempotency-key': 'b-1' })).status, 201)
  t.equal((await fire(api, bearer.trigger.fireUrl, '{}', { ...auth, 'idempotency-key': 'b-1' })).status, 200)
})

eachBackend(t, "triggers (MEDIUM): agent keys change only routines and triggers they created; an Operator's stay as configured", async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed('Weakening')
  const other = await addAgent(api, squadId, 'other')
  const routine = (await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'Operator job', assigneeAgentId: agentId })).body.routine
  const hook = await addTrigger(api, routine.id, { kind: 'webhook', signingMode: 'hmac_sha256', replayWindowSec: 300 })
  const tid = hook.trigger.id
  const forbidden = async (method: string, url: string, body: unknown, what: string) => isError(t, await api.call(method, url, body, agentToken), 403, 'forbidden', what)
  await forbidden('PATCH', `/api/routine-triggers/${tid}`, { signingMode: 'none' }, 'switch to signingMode none')
  await forbidden('PATCH', `/api/routine-triggers/${tid}`, { replayWindowSec: 86_400 }, 'widen the replay window')
  await forbidden('PATCH', `/api/routine-triggers/${tid}`, { enabled: false }, 'disable it')
  await forbidden('POST', `/api/routine-triggers/${tid}/rotate-secret`, undefined, 'rotate its secret')
  await forbidden('DELETE', `/api/routine-triggers/${tid}`, undefined, 'delete it')
  await forbidden('POST', `/api/routines/${routine.id}/triggers`, { kind: 'webhook', signingMode: 'none' }, 'add an unsigned trigger')
  await forbidden('PATCH', `/api/routines/${routine.id}`, { title: 'mine now' }, 'edit the routine')
  await forbidden('PATCH', `/api/routines/${routine.id}`, { status: 'paused' }, 'pause the routine')
  await forbidden('POST', `/api/routines/${routine.id}/revisions/${routine.revisionId}/restore`, undefined, 'restore a revision')
  const now = (await api.call('GET', `/api/routines/${routine.id}`)).body
  t.match(now.triggers[0], { signingMode: 'hmac_sha256', replayWindowSec: 300, enabled: true }, 'the trigger is as the Operator configured it')
  t.equal(now.routine.revisionNumber, 2, 'nothing was recorded')
  const ts = Math.floor(Date.now() / 1000).toString()
  const sig = `sha256=${createHmac('sha256', hook.secret!).update(`${ts}.{}`).digest('hex')}`
  t.equal((await fire(api, hook.trigger.fireUrl, '{}', { 'x-slaw-timestamp': ts, 'x-slaw-signature': sig })).status, 201, 'the old secret still works')

  // Its own routine: the agent manages it and its triggers, but not a trigger an Operator added, and no other agent does.
  const mine = (await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'My job' }, agentToken)).body.routine
  const myHook = await api.call('POST', `/api/routines/${mine.id}/triggers`, { kind: 'webhook' }, agentToken)
  t.equal(myHook.status, 201)
  t.equal((await api.call('PATCH', `/api/routine-triggers/${myHook.body.trigger.id}`, { label: 'mine' }, agentToken)).status, 200)
  t.equal((await api.call('PATCH', `/api/routines/${mine.id}`, { title: 'My job, renamed' }, agentToken)).status, 200)
  const opHook = await addTrigger(api, mine.id, { kind: 'webhook', signingMode: 'hmac_sha256' })
  await forbidden('PATCH', `/api/routine-triggers/${opHook.trigger.id}`, { signingMode: 'none' }, "weaken an Operator's trigger on its own routine")
  isError(t, await api.call('PATCH', `/api/routines/${mine.id}`, { title: 'taken' }, other.token), 403, 'forbidden', 'another agent edits it')
  isError(t, await api.call('DELETE', `/api/routine-triggers/${myHook.body.trigger.id}`, undefined, other.token), 403, 'forbidden', 'another agent deletes its trigger')
  // The Operator may do all of it.
  t.equal((await api.call('PATCH', `/api/routine-triggers/${tid}`, { replayWindowSec: 600 })).status, 200)
})

eachBackend(
  t,
  'quotas (LOW): routines created by agent keys per squad, and the shortest schedule an agent key may write',
  async (t, api) => {
    const { squadId, agentToken } = await api.seed('Quotas')
    const create = (token?: string) => api.call('POST', `/api/squads/${squadId}/routines`, { title: 'r' }, token)
    const first = await create(agentToken)
    t.equal(first.status, 201)
    t.equal((await create(agentToken)).status, 201)
    isError(t, await create(agentToken), 429, 'routine_quota_exceeded', 'a third agent routine in the squad')
    t.equal((await create()).status, 201, 'the Operator is not counted nor limited')
    const second = (await api.call('GET', `/api/squads/${squadId}/routines`)).body.routines[1]
    t.equal((await api.call('PATCH', `/api/routines/${second.id}`, { status: 'archived' }, agentToken)).status, 200)
    t.equal((await create(agentToken)).status, 201, 'archiving one frees its place')
    const rid = first.body.routine.id
    isError(t, await api.call('POST', `/api/routines/${rid}/triggers`, { kind: 'schedule', cronExpression: '* * * * *' }, agentToken), 400, 'schedule_too_frequent', 'minutely')
    isError(t, await api.call('POST', `/api/routines/${rid}/triggers`, { kind: 'schedule', cronExpression: '0,5 * * * *' }, agentToken), 400, 'schedule_too_frequent', 'a burst within the hour')
    const ok = await api.call('POST', `/api/routines/${rid}/triggers`, { kind: 'schedule', cronExpression: '*/10 * * * *' }, agentToken)
    t.equal(ok.status, 201)
    isError(t, await api.call('PATCH', `/api/routine-triggers/${ok.body.trigger.id}`, { cronExpression: '*/2 * * * *' }, agentToken), 400, 'schedule_too_frequent', 'nor by PATCH')
    t.equal((await api.call('POST', `/api/routines/${rid}/triggers`, { kind: 'schedule', cronExpression: '* * * * *' })).status, 201, 'an Operator may schedule minutely')
  },
  { routines: { maxAgentRoutinesPerSquad: 2, minAgentScheduleIntervalSec: 600 } },
)

eachBackend(t, 'quotas (LOW): defaults', async (t, api) => {
  const { squadId, agentToken } = await api.seed('Default quotas')
  const rid = (await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'r' }, agentToken)).body.routine.id
  isError(t, await api.call('POST', `/api/routines/${rid}/triggers`, { kind: 'schedule', cronExpression: '* * * * *' }, agentToken), 400, 'schedule_too_frequent')
  t.equal((await api.call('POST', `/api/routines/${rid}/triggers`, { kind: 'schedule', cronExpression: '*/5 * * * *' }, agentToken)).status, 201, 'every 5 minutes is the default floor')
  for (let i = 1; i < 20; i++) await api.call('POST', `/api/squads/${squadId}/routines`, { title: `r${i}` }, agentToken)
  isError(t, await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'r21' }, agentToken), 429, 'routine_quota_exceeded', 'the 21st')
})

t.test('quotas from the environment (slaw start)', async (t) => {
  t.same(routineLimitsFromEnv({}), {}, 'unset: the defaults apply')
  t.same(routineLimitsFromEnv({ SVC_MAX_AGENT_ROUTINES_PER_SQUAD: '5', SVC_MIN_AGENT_SCHEDULE_INTERVAL_SEC: '0' }), { maxAgentRoutinesPerSquad: 5, minAgentScheduleIntervalSec: 0 })
  t.throws(() => routineLimitsFromEnv({ SVC_MAX_AGENT_ROUTINES_PER_SQUAD: 'many' }), /SVC_MAX_AGENT_ROUTINES_PER_SQUAD must be an integer/)
  t.throws(() => routineLimitsFromEnv({ SVC_MIN_AGENT_SCHEDULE_INTERVAL_SEC: '-1' }), /at least 0/)
})
