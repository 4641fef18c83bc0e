import t from 'tap'
import { activityOf, isError, unknownId } from './helpers/fixtures.js'
import { eachBackend } from './helpers/instance.js'
import { addTrigger, fire, routineWithAssignee } from './helpers/routines.js'

/** The test clock: services read it for replay windows. */
const clock = { now: new Date('2030-01-15T10:00:00Z') }

const opts = { now: () => clock.now, bodyLimit: 8 * 1024 }

eachBackend(
  t,
  'triggers: kinds, validation, revisions; secrets shown once and never again',
  async (t, api) => {
    const { routine } = await routineWithAssignee(api)
    const sched = await addTrigger(api, routine.id, { kind: 'schedule', cronExpression: '30 9 * * 1-5', timezone: 'Europe/Berlin', label: 'weekday mornings' })
    t.equal(sched.secret, undefined)
    t.equal(sched.trigger.publicId, null)
    t.equal(sched.trigger.nextFireAt, '2030-01-16T08:30:00.000Z', 'next fire stored, in the zone (09:30 Berlin has passed today)')
    const hook = await addTrigger(api, routine.id, { kind: 'webhook' })
    t.equal(hook.trigger.signingMode, 'bearer')
    t.equal(hook.trigger.replayWindowSec, 300)
    t.match(hook.trigger.publicId, /^rtp_[A-Za-z0-9_-]{32}$/)
    t.equal(hook.trigger.fireUrl, `/api/routine-triggers/public/${hook.trigger.publicId}/fire`)
    t.match(hook.secret, /^slaw_wh_/)
    const apiTrigger = await addTrigger(api, routine.id, { kind: 'api' })
    t.equal(apiTrigger.trigger.signingMode, 'bearer')

    const bad = async (body: Record<string, unknown>, label: string) => isError(t, await api.call('POST', `/api/routines/${routine.id}/triggers`, body), 400, 'invalid_payload', label)
    await bad({ kind: 'schedule', cronExpression: '61 * * * *' }, 'invalid cron')
    await bad({ kind: 'schedule', cronExpression: '0 0 * * * *' }, 'six fields')
    await bad({ kind: 'schedule', cronExpression: '0 0 30 2 *' }, 'never fires')
    await bad({ kind: 'schedule', cronExpression: '0 9 * * *', timezone: 'Mars/Olympus' }, 'unknown timezone')
    await bad({ kind: 'webhook', replayWindowSec: 10 }, 'replay window under 30')
    await bad({ kind: 'webhook', signingMode: 'md5' }, 'unknown signing mode')
    await bad({ kind: 'api', cronExpression: '* * * * *' }, 'cron on api')
    await bad({ kind: 'carrier_pigeon' }, 'unknown kind')
    isError(t, await api.call('PATCH', `/api/routine-triggers/${hook.trigger.id}`, { cronExpression: '* * * * *' }), 400, 'invalid_payload', 'cron on webhook patch')
    isError(t, await api.call('PATCH', `/api/routine-triggers/${sched.trigger.id}`, { timezone: 'Nowhere/Land' }), 400, 'invalid_payload', 'patch unknown timezone')

    const detail = await api.call('GET', `/api/routines/${routine.id}`)
    t.equal(detail.body.triggers.length, 3)
    const text = JSON.stringify(detail.body)
    t.notOk(text.includes(hook.secret!), 'the secret is not shown again')
    t.notMatch(text, /secretHash|secretCiphertext/)
    const revisions = (await api.call('GET', `/api/routines/${routine.id}/revisions`)).body.revisions
    t.same(
      revisions.slice(0, 3).map((r: any) => r.change),
      ['trigger_created', 'trigger_created', 'trigger_created'],
    )
    t.equal(revisions[0].snapshot.triggers.length, 3)
    t.notOk(JSON.stringify(revisions).includes(hook.secret!))

    const moved = await api.call('PATCH', `/api/routine-triggers/${sched.trigger.id}`, { cronExpression: '0 12 * * *', timezone: 'America/New_York' })
    t.equal(moved.status, 200)
    t.equal(moved.body.trigger.nextFireAt, '2030-01-15T17:00:00.000Z')
    const off = await api.call('PATCH', `/api/routine-triggers/${sched.trigger.id}`, { enabled: false })
    t.equal(off.body.trigger.nextFireAt, null, 'a disabled schedule has no next fire')

    // Activity and logs carry no secret.
    const entries = await activityOf(api, (await api.call('GET', `/api/routines/${routine.id}`)).body.routine.squadId)
    t.notOk(JSON.stringify(entries).includes(hook.secret!))
    isError(t, await api.call('PATCH', `/api/routine-triggers/${unknownId}`, { enabled: true }), 404, 'not_found')
    isError(t, await api.call('DELETE', '/api/routine-triggers/nope'), 404, 'not_found')
    isError(t, await api.call('POST', `/api/routine-triggers/${sched.trigger.id}/rotate-secret`), 422, 'invalid_state', 'a schedule has no secret')
  },
  opts,
)

eachBackend(
  t,
  'public fire: bearer and api triggers; unknown, disabled and deleted answer the same 404',
  async (t, api) => {
    const { routine, agentId } = await routineWithAssignee(api)
    const hook = await addTrigger(api, routine.id, { kind: 'webhook' })
    const apiT = await addTrigger(api, routine.id, { kind: 'api' })
    const url = hook.trigger.fireUrl

    isError(t, await fire(api, url, '{}'), 401, 'unauthorized', 'no secret')
    isError(t, await fire(api, url, '{}', { authorization: 'Bearer slaw_wh_wrong_secret_value_1234567890' }), 401, 'unauthorized', 'wrong secret')
    const ok = await fire(api, url, JSON.stringify({ service: 'billing' }), { authorization: `Bearer ${hook.secret}` })
    t.equal(ok.status, 201, 'fired', { body: ok.body })
    t.equal(ok.body.run.status, 'issue_created')
    const issue = (await api.call('GET', `/api/issues/${ok.body.run.issueId}`)).body.issue
    t.equal(issue.title, 'Deploy billing', 'payload fields fill variables')
    t.equal(issue.assigneeAgentId, agentId)
    const runs = (await api.call('GET', `/api/routines/${routine.id}/runs`)).body.runs
    t.equal(runs[0].source, 'webhook')
    t.equal(runs[0].triggerId, hook.trigger.id)

    const viaApi = await fire(api, apiT.trigger.fireUrl, JSON.stringify({ variables: { service: 'auth' } }), { authorization: `Bearer ${apiT.secret}`, 'idempotency-key': 'deploy-42' })
    t.equal(viaApi.status, 201)
    const again = await fire(api, apiT.trigger.fireUrl, JSON.stringify({ variables: { service: 'auth' } }), { authorization: `Bearer ${apiT.secret}`, 'idempotency-key': 'deploy-42' })
    t.equal(again.status, 200, 'same idempotency key: same run')
    t.equal(again.body.run.id, viaApi.body.run.id)
    t.equal((await api.call('GET', `/api/issues/${viaApi.body.run.issueId}`)).body.issue.title, 'Deploy auth')
    t.equal((await api.call('GET', `/api/routines/${routine.id}/runs`)).body.runs[0].source, 'api')
    isError(t, await fire(api, apiT.trigger.fireUrl, '{}', { authorization: `Bearer ${hook.secret}` }), 401, 'unauthorized', "another trigger's secret")
    isError(t, await fire(api, url, '[1,2]', { authorization: `Bearer ${hook.secret}` }), 400, 'invalid_payload', 'body not an object')
    isError(t, await fire(api, url, '{"service":', { authorization: `Bearer ${hook.secret}` }), 400, 'invalid_payload', 'malformed JSON')
    isError(t, await fire(api, url, JSON.stringify({ service: 42 }), { authorization: `Bearer ${hook.secret}` }), 400, 'invalid_payload', 'wrong variable type from payload')

    // Body over the limit: 413, nothing created.
    const runsBefore = (await api.call('GET', `/api/routines/${routine.id}/runs`)).body.runs.length
    isError(t, await fire(api, url, JSON.stringify({ blob: 'x'.repeat(10_000) }), { authorization: `Bearer ${hook.secret}` }), 413, 'payload_too_large')

    // The same 404 for unknown, malformed, disabled and deleted.
    const unknown = await fire(api, '/api/routine-triggers/public/rtp_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/fire', '{}')
    isError(t, unknown, 404, 'not_found', 'unknown publicId')
    isError(t, await fire(api, '/api/routine-triggers/public/x/fire', '{}'), 404, 'not_found', 'malformed publicId')
    await api.call('PATCH', `/api/routine-triggers/${hook.trigger.id}`, { enabled: false })
    const disabled = await fire(api, url, '{}', { authorization: `Bearer ${hook.secret}` })
    isError(t, disabled, 404, 'not_found', 'disabled')
    t.same(disabled.body, unknown.body, 'disabled looks unknown')
    await api.call('PATCH', `/api/routine-triggers/${hook.trigger.id}`, { enabled: true })
    t.equal((await fire(api, url, '{}', { authorization: `Bearer ${hook.secret}` })).status, 201, 're-enabled')
    t.equal((await api.call('DELETE', `/api/routine-triggers/${hook.trigger.id}`)).status, 200)
    const deleted = await fire(api, url, '{}', { authorization: `Bearer ${hook.secret}` })
    t.same(deleted.body, unknown.body, 'deleted looks unknown')
    t.equal(deleted.status, 404)

    // Paused and archived routines: 422 after the signature check, nothing created.
    const count = (await api.call('GET', `/api/routines/${routine.id}/runs`)).body.runs.length
    t.equal(count, runsBefore + 1)
    await api.call('PATCH', `/api/routines/${routine.id}`, { status: 'paused' })
    isError(t, await fire(api, apiT.trigger.fireUrl, '{}', { authorization: `Bearer ${apiT.secret}` }), 422, 'invalid_state', 'paused')
    await api.call('PATCH', `/api/routines/${routine.id}`, { status: 'archived' })
    isError(t, await fire(api, apiT.trigger.fireUrl, '{}', { authorization: `Bearer ${apiT.secret}` }), 422, 'invalid_state', 'archived')
    t.equal((await api.call('GET', `/api/routines/${routine.id}/runs`)).body.runs.length, count, 'nothing created')
  },
  opts,
)

eachBackend(
  t,
  'public fire: simultaneous fires of a coalescing routine make one issue',
  async (t, api) => {
    const { routine } = await routineWithAssignee(api, { concurrencyPolicy: 'coalesce_if_active' })
    const hook = await addTrigger(api, routine.id, { kind: 'webhook' })
    const answers = await Promise.all(Array.from({ length: 6 }, () => fire(api, hook.trigger.fireUrl, '{}', { authorization: `Bearer ${hook.secret}` })))
    t.same(
      answers.map((a) => a.status),
      [201, 201, 201, 201, 201, 201],
    )
    const statuses = answers.map((a) => a.body.run.status).sort()
    t.same(statuses, ['coalesced', 'coalesced', 'coalesced', 'coalesced', 'coalesced', 'issue_created'], 'one issue, the rest linked to it')
    const first = answers.find((a) => a.body.run.status === 'issue_created')!.body.run
    t.ok(answers.every((a) => a.body.run.status === 'issue_created' || a.body.run.linkedRunId === first.id))
  },
  opts,
)
