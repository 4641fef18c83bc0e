import t from 'tap'
import { eachBackend, operatorToken } from './helpers/instance.js'

// Guessing keys: every failure used to answer 401 at full speed (300 of 300). Now an address past
// the limit answers 429 with Retry-After, valid keys keep working, and the window ends.
let clock = Date.parse('2026-11-28T00:00:00Z')
eachBackend(
  t,
  'repeated authentication failures from one address answer 429 with Retry-After; valid keys are not slowed',
  async (t, api) => {
    const { app } = api.instance
    const get = (token: string, remoteAddress = '203.0.113.7') => app.inject({ method: 'GET', url: '/api/squads', headers: { authorization: `Bearer ${token}` }, remoteAddress })
    // The Operator key in use from the same address, before the attack (it is in the node's cache).
    t.equal((await get(operatorToken)).statusCode, 200)
    const statuses: number[] = []
    let limited: Awaited<ReturnType<typeof get>> | undefined
    for (let i = 0; i < 300; i++) {
      const res = await get(`slaw_op_guess_${String(i).padStart(20, '0')}`)
      statuses.push(res.statusCode)
      if (res.statusCode === 429) limited ??= res
    }
    t.equal(statuses.filter((s) => s === 401).length, 5, 'the first 5 failures answer 401')
    t.equal(statuses.filter((s) => s === 429).length, 295, 'every later guess answers 429, without a key check')
    t.match(limited!.json(), { code: 'rate_limited', error: /retry in \d+ s/ })
    t.equal(limited!.headers['retry-after'], '60', 'Retry-After: the rest of the window, in seconds')
    t.equal((await get(operatorToken)).statusCode, 200, 'a valid key in use from the limited address still works')
    t.equal((await get('slaw_op_guess_from_elsewhere_000001', '198.51.100.2')).statusCode, 401, 'another address is not limited')
    t.equal((await get(operatorToken, '198.51.100.2')).statusCode, 200)
    clock += 30_000
    t.equal((await get('slaw_op_guess_again_00000000000001')).headers['retry-after'], '30', 'Retry-After counts down')
    clock += 31_000
    t.equal((await get('slaw_op_guess_after_window_0000001')).statusCode, 401, 'after the window the address may try again')
  },
  () => ({ authFailureLimit: { max: 5, windowSec: 60 }, now: () => new Date(clock) }),
)

eachBackend(t, 'the default limit is 30 failures a minute; false turns it off', async (t, api) => {
  const statuses: number[] = []
  for (let i = 0; i < 40; i++) statuses.push((await api.call('GET', '/api/squads', undefined, `slaw_op_guess_${String(i).padStart(20, '0')}`)).status)
  t.same([statuses.filter((s) => s === 401).length, statuses.filter((s) => s === 429).length], [30, 10])
})

eachBackend(
  t,
  'authFailureLimit: false never answers 429',
  async (t, api) => {
    for (let i = 0; i < 50; i++) t.equal((await api.call('GET', '/api/squads', undefined, `slaw_op_guess_${String(i).padStart(20, '0')}`)).status, 401)
  },
  { authFailureLimit: false },
)

eachBackend(t, 'a 400 with thousands of details is capped, with a marker that details were dropped', async (t, api) => {
  const { squadId } = await api.seed()
  const config: Record<string, string> = {}
  for (let i = 0; i < 5000; i++) config[`password_${i}_${'x'.repeat(100)}`] = 'hunter2'
  const res = await api.instance.app.inject({
    method: 'POST',
    url: `/api/squads/${squadId}/secret-provider-configs`,
    headers: { authorization: `Bearer ${operatorToken}` },
    payload: { provider: 'local_encrypted', name: 'big', config },
  })
  t.equal(res.statusCode, 400)
  t.ok(res.body.length < 20_000, `the body is small (${res.body.length} bytes; it was over 600 KB)`)
  const body = res.json()
  t.equal(body.code, 'sensitive_config_rejected')
  t.equal(body.details.length, 21, '20 details and the marker')
  t.match(body.details.at(-1), { path: '/', message: 'details truncated: 4980 more not shown' })
  t.match(body.error, /… \(truncated\)$/, 'the sentence is clipped too')
})
