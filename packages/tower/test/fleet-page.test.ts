import t from 'tap'
import { forEachBackend, heartbeatBody, ADMIN_KEY } from './helpers/tower.js'

const cookieOf = (res: { headers: Headers }): string => String(res.headers.get('set-cookie')).split(';')[0]!

forEachBackend(t, { autoApprove: [{ kind: 'hostname', pattern: 'auto-*' }] }, async (t, h) => {
  const { apiKey, instancePk } = await h.enrolled({ hostname: 'auto-one.test' })
  t.equal((await h.ingest('/heartbeat', heartbeatBody({ spend: { todayCents: 1234, monthCents: 56789 } }), apiKey)).status, 200)
  const pending = await h.ingest('/enroll', {
    protocolVersion: 1,
    instance: { machineId: 'm-pending', instanceId: 'default', hostname: 'manual-<b>.test', os: 'linux', slawVersion: '0.1.0' },
    capabilities: { reportIssueTitles: true, liveStream: false },
  })
  t.equal(pending.body.state, 'pending')

  // Signed out: the sign-in page, with the headers of every page.
  const signedOut = await fetch(`${h.base}/`)
  t.equal(signedOut.status, 200)
  const html = await signedOut.text()
  t.match(html, /<label for="admin-key">Admin key<\/label>/)
  t.notMatch(html, /auto-one/, 'no fleet data before sign-in')
  t.match(signedOut.headers.get('content-security-policy'), /^default-src 'self'; script-src 'self'; style-src 'self'/)
  t.equal(signedOut.headers.get('x-frame-options'), 'DENY')
  t.equal(signedOut.headers.get('referrer-policy'), 'no-referrer')
  t.equal(signedOut.headers.get('x-content-type-options'), 'nosniff')
  t.notMatch(html, /<script>|<style>|style=/, 'no inline script or style')

  const wrong = await h.call('POST', '/api/console/session', { body: { adminKey: 'not-the-admin-key' } })
  t.equal(wrong.status, 401)
  t.match(wrong.body, { code: 'unauthorized', error: 'That admin key is wrong.' })
  t.equal(wrong.headers.get('set-cookie'), null)

  const signIn = await h.call('POST', '/api/console/session', { body: { adminKey: ADMIN_KEY } })
  t.equal(signIn.status, 200)
  t.match(signIn.headers.get('set-cookie'), /^slaw_tower_session=slaw_ts_[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/; Max-Age=43200$/)
  const cookie = cookieOf(signIn)
  const token = cookie.split('=')[1]!
  const rows = await h.tower.db.selectFrom('tower_console_sessions').selectAll().execute()
  t.equal(rows.length, 1)
  t.notMatch(JSON.stringify(rows), token, 'the token is stored only as a keyed hash')
  t.notMatch(JSON.stringify(rows), ADMIN_KEY)

  const fleet = await fetch(`${h.base}/`, { headers: { cookie } })
  const page = await fleet.text()
  t.match(page, /auto-one\.test/)
  t.match(page, /badge online">online/)
  t.match(page, /\$12\.34/, 'spend today')
  t.match(page, /\$567\.89/, 'month to date')
  t.match(page, /manual-&lt;b&gt;\.test/, 'names are escaped')
  t.match(page, /aria-label="Approve manual-&lt;b&gt;\.test \(default\)">Approve<\/button>/)
  t.equal((await h.call('GET', `/api/admin/instances/${instancePk}`, { headers: { cookie } })).status, 200, 'the cookie reads the admin API')

  const approve = (headers: Record<string, string>) => h.call('POST', `/api/admin/enrollments/${pending.body.enrollmentId}/approve`, { headers: { cookie, ...headers } })
  const noOrigin = await approve({})
  t.equal(noOrigin.status, 403)
  t.match(noOrigin.body, { code: 'forbidden', error: /Cross-site request refused/ })
  t.equal((await approve({ origin: 'http://evil.example' })).status, 403)
  const ok = await approve({ origin: h.base })
  t.equal(ok.status, 200)
  t.equal(ok.body.state, 'active')

  const out = await h.call('DELETE', '/api/console/session', { headers: { cookie, origin: h.base } })
  t.equal(out.status, 200)
  t.match(out.headers.get('set-cookie'), /Max-Age=0/)
  t.equal((await h.call('GET', '/api/admin/instances', { headers: { cookie } })).status, 401, 'signed out')
  t.notMatch(await (await fetch(`${h.base}/`, { headers: { cookie } })).text(), /auto-one/)
  t.equal((await h.admin('GET', '/instances')).status, 200, 'the bearer admin key is unaffected')
})

t.test('a session ends when it expires, and when the tower restarts with another admin key', async (t) => {
  const { createTower } = await import('@slaw/tower')
  const { mkdtempSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  let clock = Date.parse('2026-11-28T00:00:00Z')
  const dataDir = mkdtempSync(join(tmpdir(), 'slaw-tower-sessions-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const first = await createTower({ dataDir, adminKey: ADMIN_KEY, consoleSessionHours: 1, now: () => new Date(clock) })
  const signIn = async (tower: typeof first) => {
    const res = await tower.app.inject({ method: 'POST', url: '/api/console/session', payload: { adminKey: ADMIN_KEY } })
    return { res, cookie: String(res.headers['set-cookie']).split(';')[0]! }
  }
  const { res, cookie } = await signIn(first)
  t.match(res.headers['set-cookie'], /Max-Age=3600/)
  const longLived = (await signIn(first)).cookie
  t.equal((await first.app.inject({ method: 'GET', url: '/api/admin/instances', headers: { cookie } })).statusCode, 200)
  clock += 3_600_000
  t.equal((await first.app.inject({ method: 'GET', url: '/api/admin/instances', headers: { cookie } })).statusCode, 401, 'expired after an hour')
  clock -= 3_600_000
  await first.close()
  const second = await createTower({ dataDir, adminKey: 'another-admin-key-987654', now: () => new Date(clock) })
  t.teardown(() => second.close())
  t.equal((await second.app.inject({ method: 'GET', url: '/api/admin/instances', headers: { cookie: longLived } })).statusCode, 401, 'a session of the old admin key is not found')
})
