import t from 'tap'
import http from 'node:http'
import { createHash } from 'node:crypto'
import type { Kysely } from 'kysely'
import { eachBackend, operatorToken } from './helpers/instance.js'

// Console sign-in (docs/console.md): an Operator key is exchanged for an HttpOnly session cookie;
// the cookie is an Operator principal on /api/*, mutations need the server's own Origin.
let clock = Date.parse('2026-11-28T00:00:00Z')
const origin = 'http://localhost:80'

const cookieOf = (setCookie: unknown): string => {
  const line = Array.isArray(setCookie) ? setCookie[0] : setCookie
  return String(line).split(';')[0]!
}
const rows = (api: { instance: { storage: unknown } }) => (api.instance.storage as { db: Kysely<any> }).db.selectFrom('consoleSessions').selectAll().execute()

eachBackend(
  t,
  'sign in, use the cookie for reads and same-origin mutations, refuse cross-site ones, sign out, expiry',
  async (t, api) => {
    const { app } = api.instance
    const signIn = await app.inject({ method: 'POST', url: '/api/console/session', payload: { operatorKey: operatorToken } })
    t.equal(signIn.statusCode, 200)
    t.equal(signIn.json().session.expiresAt, new Date(clock + 12 * 3_600_000).toISOString(), 'expires after the default 12 h')
    const setCookie = String(signIn.headers['set-cookie'])
    t.match(setCookie, /^slaw_session=slaw_cs_[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/; Max-Age=43200$/, 'cookie attributes (no Secure over plain http)')
    t.notMatch(signIn.body, /slaw_cs_/, 'the token travels only in the cookie')
    const cookie = cookieOf(signIn.headers['set-cookie'])
    const token = cookie.split('=')[1]!

    const stored = await rows(api)
    t.equal(stored.length, 1)
    t.equal(stored[0]!.tokenHash, createHash('sha256').update(token).digest('hex'), 'stored as the SHA-256 of the token')
    t.notMatch(JSON.stringify(stored), token, 'the token itself is in no column')
    t.notMatch(JSON.stringify(stored), operatorToken, 'nor is the Operator key')

    const session = await app.inject({ method: 'GET', url: '/api/console/session', headers: { cookie } })
    t.equal(session.statusCode, 200)
    t.same(session.json(), signIn.json())
    t.equal((await app.inject({ method: 'GET', url: '/api/squads', headers: { cookie } })).statusCode, 200, 'the cookie reads like an Operator key')

    const create = (headers: Record<string, string>) =>
      app.inject({ method: 'POST', url: '/api/squads', headers: { cookie, ...headers }, payload: { name: `Squad ${Math.random().toString(36).slice(2, 8)}` } })
    t.equal((await create({ origin: 'http://localhost:80', host: 'localhost:80' })).statusCode, 201, 'a same-origin mutation passes')
    const noOrigin = await create({})
    t.equal(noOrigin.statusCode, 403)
    t.match(noOrigin.json(), { code: 'forbidden', error: /cross-site request refused/i })
    const foreign = await create({ origin: 'https://evil.example', host: 'localhost:80' })
    t.equal(foreign.statusCode, 403, 'a foreign Origin is refused')
    t.equal((await create({ origin: 'https://localhost:80', host: 'localhost:80' })).statusCode, 403, 'another scheme is another origin')
    t.equal((await create({ origin: 'https://slaw.example', host: 'slaw.example', 'x-forwarded-proto': 'https' })).statusCode, 201, 'behind a TLS proxy: the scheme of X-Forwarded-Proto')
    t.equal((await create({ origin: 'https://evil.example', host: 'slaw.example', 'x-forwarded-proto': 'https' })).statusCode, 403)
    const viaProxy = await app.inject({ method: 'POST', url: '/api/console/session', headers: { 'x-forwarded-proto': 'https' }, payload: { operatorKey: operatorToken } })
    t.match(String(viaProxy.headers['set-cookie']), /; Secure$/, 'Secure when the request came over https')
    t.equal((await api.call('POST', '/api/squads', { name: 'by bearer' })).status, 201, 'bearer requests need no Origin')
    t.equal((await api.call('GET', '/api/console/session')).status, 401, 'a bearer key has no console session')

    // Signing out needs the Origin too, and ends the session everywhere.
    t.equal((await app.inject({ method: 'DELETE', url: '/api/console/session', headers: { cookie } })).statusCode, 403)
    const out = await app.inject({ method: 'DELETE', url: '/api/console/session', headers: { cookie, origin, host: 'localhost:80' } })
    t.equal(out.statusCode, 200)
    t.same(out.json(), { ok: true })
    t.match(String(out.headers['set-cookie']), /^slaw_session=; HttpOnly; SameSite=Strict; Path=\/; Max-Age=0$/, 'the cookie is cleared')
    t.equal((await rows(api)).filter((r) => r.tokenHash === createHash('sha256').update(token).digest('hex')).length, 0, 'the row is deleted')
    t.equal((await rows(api)).length, 1, 'the other session (signed in through the proxy) stays')
    const after = await app.inject({ method: 'GET', url: '/api/squads', headers: { cookie } })
    t.equal(after.statusCode, 401)
    t.match(after.json(), { code: 'unauthorized', error: /sign in again/ })
    t.match(String(after.headers['set-cookie']), /Max-Age=0/, 'a dead cookie is cleared')

    // Expiry: the session ends 12 h after sign-in.
    const again = cookieOf((await app.inject({ method: 'POST', url: '/api/console/session', payload: { operatorKey: operatorToken } })).headers['set-cookie'])
    clock += 12 * 3_600_000 - 1000
    t.equal((await app.inject({ method: 'GET', url: '/api/console/session', headers: { cookie: again } })).statusCode, 200, 'still valid a second before')
    clock += 1000
    t.equal((await app.inject({ method: 'GET', url: '/api/console/session', headers: { cookie: again } })).statusCode, 401, 'expired at 12 h')
    t.equal((await app.inject({ method: 'GET', url: '/api/squads', headers: { cookie: 'slaw_session=garbage' } })).statusCode, 401, 'a malformed cookie is 401')
    t.equal(
      (await app.inject({ method: 'GET', url: '/api/squads', headers: { cookie: again, authorization: `Bearer ${operatorToken}` } })).statusCode,
      200,
      'an Authorization header wins over the cookie',
    )
  },
  () => ({ now: () => new Date(clock) }),
)

eachBackend(
  t,
  'session lifetime is configurable; revoking the key ends its sessions; revoke-all; agent keys cannot sign in',
  async (t, api) => {
    const { app } = api.instance
    const created = await api.call('POST', '/api/operator-keys', { name: 'laptop' })
    t.equal(created.status, 201)
    const signIn = await app.inject({ method: 'POST', url: '/api/console/session', payload: { operatorKey: created.body.token } })
    t.equal(signIn.statusCode, 200)
    t.match(String(signIn.headers['set-cookie']), /Max-Age=3600$/, 'consoleSessionHours: 1')
    const cookie = cookieOf(signIn.headers['set-cookie'])
    const other = cookieOf((await app.inject({ method: 'POST', url: '/api/console/session', payload: { operatorKey: operatorToken } })).headers['set-cookie'])
    t.equal((await app.inject({ method: 'GET', url: '/api/squads', headers: { cookie } })).statusCode, 200)
    t.equal((await api.call('DELETE', `/api/operator-keys/${created.body.key.id}`)).status, 200)
    t.equal((await app.inject({ method: 'GET', url: '/api/squads', headers: { cookie } })).statusCode, 401, 'revoking the key ends its session')
    t.equal((await app.inject({ method: 'GET', url: '/api/squads', headers: { cookie: other } })).statusCode, 200, 'other keys keep theirs')
    t.equal((await rows(api)).length, 1, "the revoked key's session row is gone")

    const { agentToken } = await api.seed()
    const agent = await app.inject({ method: 'POST', url: '/api/console/session', payload: { operatorKey: agentToken } })
    t.equal(agent.statusCode, 403)
    t.match(agent.json(), { code: 'forbidden', error: /Only an Operator key/ })
    t.equal((await api.call('DELETE', '/api/console/sessions', undefined, agentToken)).status, 403, 'an agent may not revoke sessions')

    const all = await api.call('DELETE', '/api/console/sessions')
    t.same([all.status, all.body], [200, { ok: true, revoked: 1 }])
    t.equal((await app.inject({ method: 'GET', url: '/api/squads', headers: { cookie: other } })).statusCode, 401, 'revoke-all ends every session')
    t.equal((await app.inject({ method: 'POST', url: '/api/console/session', payload: {} })).statusCode, 400, 'a missing key is 400')
  },
  { consoleSessionHours: 1 },
)

eachBackend(
  t,
  'a wrong key answers 401 and counts towards the per-address failure limit (then 429)',
  async (t, api) => {
    const { app } = api.instance
    const attempt = (operatorKey: string) => app.inject({ method: 'POST', url: '/api/console/session', payload: { operatorKey }, remoteAddress: '203.0.113.9' })
    const wrong = await attempt('slaw_op_wrong_key_00000000000000000')
    t.equal(wrong.statusCode, 401)
    t.match(wrong.json(), { code: 'unauthorized', error: 'That Operator key is unknown, revoked or expired.' })
    t.equal(wrong.headers['set-cookie'], undefined, 'no cookie')
    t.equal((await attempt('short')).statusCode, 401, 'a malformed key is wrong too')
    t.equal((await attempt('slaw_op_wrong_key_00000000000000002')).statusCode, 401)
    const limited = await attempt('slaw_op_wrong_key_00000000000000003')
    t.equal(limited.statusCode, 429)
    t.match(limited.json(), { code: 'rate_limited' })
    t.ok(Number(limited.headers['retry-after']) > 0, 'Retry-After')
    // Bearer failures from the address count against the same limit.
    t.equal((await app.inject({ method: 'GET', url: '/api/squads', headers: { authorization: 'Bearer slaw_op_wrong_key_00000000000000004' }, remoteAddress: '203.0.113.9' })).statusCode, 429)
    t.equal((await rows(api)).length, 0, 'no session was made')
  },
  { authFailureLimit: { max: 3, windowSec: 60 } },
)

eachBackend(t, 'over real HTTP: sign in, the cookie on a mutation and on the live events stream', async (t, api) => {
  const address = await api.instance.listen({ port: 0, host: '127.0.0.1' })
  const signIn = await fetch(`${address}/api/console/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ operatorKey: operatorToken }) })
  t.equal(signIn.status, 200)
  const cookie = cookieOf(signIn.headers.get('set-cookie'))
  const refused = await fetch(`${address}/api/squads`, { method: 'POST', headers: { cookie, 'content-type': 'application/json', origin: 'http://127.0.0.1:1' }, body: JSON.stringify({ name: 'x' }) })
  t.equal(refused.status, 403, 'another port is another origin')
  const created = await fetch(`${address}/api/squads`, { method: 'POST', headers: { cookie, 'content-type': 'application/json', origin: address }, body: JSON.stringify({ name: 'Live' }) })
  t.equal(created.status, 201)
  const squadId = ((await created.json()) as { squad: { id: string } }).squad.id
  const stream = await new Promise<{ status: number; type: string }>((resolve, reject) => {
    const req = http.get(`${address}/api/squads/${squadId}/events`, { headers: { cookie, accept: 'text/event-stream' } }, (res) => {
      resolve({ status: res.statusCode!, type: String(res.headers['content-type']) })
      res.destroy()
    })
    req.on('error', reject)
  })
  t.equal(stream.status, 200, 'the SSE route takes the cookie')
  t.match(stream.type, /text\/event-stream/)
  const anon = await fetch(`${address}/api/squads/${squadId}/events`)
  t.equal(anon.status, 401)
})
