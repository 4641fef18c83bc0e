import { createHmac } from 'node:crypto'
import t from 'tap'
import { activityOf, isError, unknownId } from './helpers/fixtures.js'
import { eachBackend, type TestApi } from './helpers/instance.js'

/** The test clock: services read it for replay windows. */
const clock = { now: new Date('2030-01-15T10:00:00Z') }
const unix = () => Math.floor(clock.now.getTime() / 1000)
const hmac = (secret: string, data: string) => createHmac('sha256', secret).update(data).digest('hex')

async function setup(api: TestApi, routineExtra: Record<string, unknown> = {}) {
  const { squadId, agentId, agentToken } = await api.seed()
  const res = await api.call('POST', `/api/squads/${squadId}/routines`, {
    title: 'Deploy {{service}}',
    assigneeAgentId: agentId,
    concurrencyPolicy: 'always_enqueue',
    variables: [{ name: 'service', defaultValue: 'web' }],
    ...routineExtra,
  })
  if (res.status !== 201) throw new Error(JSON.stringify(res.body))
  return { squadId, agentId, agentToken, routine: res.body.routine }
}

async function addTrigger(api: TestApi, routineId: string, body: Record<string, unknown>) {
  const res = await api.call('POST', `/api/routines/${routineId}/triggers`, body)
  if (res.status !== 201) throw new Error(`trigger: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body as { trigger: any; secret?: string }
}

/** POSTs a raw body to a public fire URL, with no API key. */
function fire(api: TestApi, url: string, body: string, headers: Record<string, string> = {}) {
  return api.call('POST', url, body, null, { 'content-type': 'application/json', ...headers })
}

const opts = { now: () => clock.now, bodyLimit: 8 * 1024 }

eachBackend(t, 'triggers: kinds, validation, revisions; secrets shown once and never again', async (t, api) => {
  const { routine } = await setup(api)
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
  t.same(revisions.slice(0, 3).map((r: any) => r.change), ['trigger_created', 'trigger_created', 'trigger_created'])
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
}, opts)

eachBackend(t, 'public fire: bearer and api triggers; unknown, disabled and deleted answer the same 404', async (t, api) => {
  const { routine, agentId } = await setup(api)
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
  isError(t, await fire(api, apiT.trigger.fireUrl, '{}', { authorization: `Bearer ${hook.secret}` }), 401, 'unauthorized', 'another trigger\'s secret')
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
}, opts)

eachBackend(t, 'public fire: hmac_sha256 (timestamp, replay window), vcs_hmac, none; rotation invalidates at once', async (t, api) => {
  const { routine, squadId } = await setup(api)
  const hook = await addTrigger(api, routine.id, { kind: 'webhook', signingMode: 'hmac_sha256', replayWindowSec: 60 })
  const secret = hook.secret!
  const url = hook.trigger.fireUrl
  const body = JSON.stringify({ service: 'search' })
  const signed = (s: string, ts: number, b = body) => ({ 'x-slaw-timestamp': String(ts), 'x-slaw-signature': `sha256=${hmac(s, `${ts}.${b}`)}` })

  const ok = await fire(api, url, body, signed(secret, unix()))
  t.equal(ok.status, 201, 'signed fire', { body: ok.body })
  t.equal((await api.call('GET', `/api/issues/${ok.body.run.issueId}`)).body.issue.title, 'Deploy search')
  // A replay of the same signed request inside the window returns the same run.
  const replay = await fire(api, url, body, signed(secret, unix()))
  t.equal(replay.status, 200)
  t.equal(replay.body.run.id, ok.body.run.id)
  isError(t, await fire(api, url, body, signed(secret, unix() - 61)), 401, 'unauthorized', 'stale timestamp')
  isError(t, await fire(api, url, body, signed(secret, unix() + 61)), 401, 'unauthorized', 'timestamp from the future')
  t.equal((await fire(api, url, body, signed(secret, unix() - 59))).status, 201, 'inside the window')
  isError(t, await fire(api, url, body, { ...signed(secret, unix()), 'x-slaw-signature': `sha256=${'0'.repeat(64)}` }), 401, 'unauthorized', 'bad signature')
  isError(t, await fire(api, url, JSON.stringify({ service: 'evil' }), signed(secret, unix())), 401, 'unauthorized', 'body changed after signing')
  isError(t, await fire(api, url, body, { 'x-slaw-signature': signed(secret, unix())['x-slaw-signature'] }), 401, 'unauthorized', 'no timestamp')
  isError(t, await fire(api, url, body, { authorization: `Bearer ${secret}` }), 401, 'unauthorized', 'bearer on an hmac trigger')

  const rotated = await api.call('POST', `/api/routine-triggers/${hook.trigger.id}/rotate-secret`)
  t.equal(rotated.status, 200)
  t.not(rotated.body.secret, secret)
  t.ok(rotated.body.trigger.secretRotatedAt)
  isError(t, await fire(api, url, JSON.stringify({ service: 'x1' }), signed(secret, unix(), JSON.stringify({ service: 'x1' }))), 401, 'unauthorized', 'old secret after rotation')
  const fresh = await fire(api, url, JSON.stringify({ service: 'x2' }), signed(rotated.body.secret, unix(), JSON.stringify({ service: 'x2' })))
  t.equal(fresh.status, 201, 'new secret works', { body: fresh.body })
  const revs = (await api.call('GET', `/api/routines/${routine.id}/revisions`)).body.revisions
  t.equal(revs[0].change, 'secret_rotated')
  const rotation = (await activityOf(api, squadId, 'entityType=routine')).find((e: any) => e.action === 'routine.trigger_secret_rotated')
  t.ok(rotation, 'rotation in activity')
  t.notOk(JSON.stringify(rotation).includes(rotated.body.secret))

  // Bearer rotation too.
  const bearer = await addTrigger(api, routine.id, { kind: 'api' })
  const rb = await api.call('POST', `/api/routine-triggers/${bearer.trigger.id}/rotate-secret`)
  isError(t, await fire(api, bearer.trigger.fireUrl, '{}', { authorization: `Bearer ${bearer.secret}` }), 401, 'unauthorized', 'old bearer secret after rotation')
  t.equal((await fire(api, bearer.trigger.fireUrl, '{}', { authorization: `Bearer ${rb.body.secret}` })).status, 201)

  // GitHub style.
  const gh = await addTrigger(api, routine.id, { kind: 'webhook', signingMode: 'vcs_hmac' })
  const push = JSON.stringify({ ref: 'refs/heads/main', service: 'git' })
  const ghOk = await fire(api, gh.trigger.fireUrl, push, { 'x-hub-signature-256': `sha256=${hmac(gh.secret!, push)}`, 'x-github-delivery': 'd-1' })
  t.equal(ghOk.status, 201)
  const ghAgain = await fire(api, gh.trigger.fireUrl, push, { 'x-hub-signature-256': `sha256=${hmac(gh.secret!, push)}`, 'x-github-delivery': 'd-1' })
  t.equal(ghAgain.body.run.id, ghOk.body.run.id, 'a redelivery is the same run')
  isError(t, await fire(api, gh.trigger.fireUrl, push, { 'x-hub-signature-256': `sha256=${hmac('wrong', push)}` }), 401, 'unauthorized', 'vcs bad signature')
  isError(t, await fire(api, gh.trigger.fireUrl, push), 401, 'unauthorized', 'vcs no signature')

  // none: the publicId is the only protection; rotation has nothing to rotate.
  const open = await addTrigger(api, routine.id, { kind: 'webhook', signingMode: 'none' })
  t.equal(open.secret, undefined)
  t.equal((await fire(api, open.trigger.fireUrl, '')).status, 201, 'empty body fires with defaults')
  isError(t, await api.call('POST', `/api/routine-triggers/${open.trigger.id}/rotate-secret`), 422, 'invalid_state')
  // Switching a trigger to a signing mode issues a new secret, once.
  const keyed = await api.call('PATCH', `/api/routine-triggers/${open.trigger.id}`, { signingMode: 'bearer' })
  t.match(keyed.body.secret, /^slaw_wh_/)
  isError(t, await fire(api, open.trigger.fireUrl, ''), 401, 'unauthorized', 'no longer open')
  t.equal((await fire(api, open.trigger.fireUrl, '', { authorization: `Bearer ${keyed.body.secret}` })).status, 201)
}, opts)
