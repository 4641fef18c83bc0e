import { createHmac } from 'node:crypto'
import t from 'tap'
import { activityOf, isError } from './helpers/fixtures.js'
import { eachBackend } from './helpers/instance.js'
import { addTrigger, fire, routineWithAssignee } from './helpers/routines.js'

/** The test clock: services read it for replay windows. */
const clock = { now: new Date('2030-01-15T10:00:00Z') }
const unix = () => Math.floor(clock.now.getTime() / 1000)
const hmac = (secret: string, data: string) => createHmac('sha256', secret).update(data).digest('hex')

const opts = { now: () => clock.now, bodyLimit: 8 * 1024 }

eachBackend(
  t,
  'public fire: hmac_sha256 (timestamp, replay window), vcs_hmac, none; rotation invalidates at once',
  async (t, api) => {
    const { routine, squadId } = await routineWithAssignee(api)
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
  },
  opts,
)
