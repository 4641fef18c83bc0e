import { request as httpRequest } from 'node:http'
import { deflateSync, gzipSync } from 'node:zlib'
import t from 'tap'
import { MAX_BODY_BYTES, PROTOCOL_VERSION } from '@slaw/core/ingest'
import { ADMIN_KEY, enrollBody, forEachBackend, heartbeatBody, identity } from './helpers/tower.js'

/** A raw POST (fetch would not send some of these bodies as given). */
function rawPost(base: string, path: string, body: Buffer | string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(base + path, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null })
      })
    })
    req.on('error', reject)
    req.end(body)
  })
}

forEachBackend(t, { autoApprove: true }, async (t, h) => {
  t.test('protocol versions: current and prior accepted, others 426', async (t) => {
    const { apiKey } = await h.enrolled()
    t.equal((await h.ingest('/heartbeat', heartbeatBody({ protocolVersion: PROTOCOL_VERSION }), apiKey)).status, 200, 'current')
    t.equal((await h.ingest('/heartbeat', heartbeatBody({ protocolVersion: PROTOCOL_VERSION - 1 }), apiKey)).status, 200, 'prior')
    for (const version of [PROTOCOL_VERSION - 2, -7]) {
      const old = await h.ingest('/heartbeat', heartbeatBody({ protocolVersion: version }), apiKey)
      t.equal(old.status, 426, `version ${version}`)
      t.equal(old.body.code, 'protocol_version_unsupported')
      t.match(old.body.error, /no longer supported.*Upgrade slaw/)
    }
    const newer = await h.ingest('/heartbeat', heartbeatBody({ protocolVersion: PROTOCOL_VERSION + 1 }), apiKey)
    t.equal(newer.status, 426)
    t.match(newer.body.error, /newer than this tower/)
    // An old instance learns about the version, not about the fields its body lacks.
    const oldShape = await h.ingest('/heartbeat', { protocolVersion: -1, alive: true }, apiKey)
    t.equal(oldShape.status, 426)
    const oldEnroll = await h.ingest('/enroll', enrollBody(identity(), { protocolVersion: -1 }))
    t.equal(oldEnroll.status, 426)
    const missing = await h.ingest('/heartbeat', { ...heartbeatBody(), protocolVersion: undefined }, apiKey)
    t.equal(missing.status, 400)
    t.equal((await h.ingest('/heartbeat', heartbeatBody({ protocolVersion: '1' }), apiKey)).status, 400, 'a string is not a version')
  })

  t.test('gzip and plain JSON bodies', async (t) => {
    const { apiKey } = await h.enrolled()
    const gz = await h.ingest('/heartbeat', heartbeatBody(), apiKey, { gzip: true })
    t.equal(gz.status, 200)
    t.equal(gz.body.acknowledged, true)
    const enrolled = await h.ingest('/enroll', enrollBody(identity()), null, { gzip: true })
    t.equal(enrolled.status, 200)
    const deflated = await rawPost(h.base, '/api/ingest/v1/heartbeat', deflateSync(JSON.stringify(heartbeatBody())), {
      'content-type': 'application/json',
      'content-encoding': 'deflate',
      authorization: `Bearer ${apiKey}`,
    })
    t.equal(deflated.status, 200)
  })

  t.test('a gzip bomb is refused and the tower keeps serving', async (t) => {
    const { apiKey } = await h.enrolled()
    // 40 MiB of spaces inflate from about 40 KiB: over the 32 MiB limit.
    const bomb = gzipSync(Buffer.alloc(MAX_BODY_BYTES + 8 * 1024 * 1024, 0x20))
    t.ok(bomb.length < 1024 * 1024)
    const started = Date.now()
    const res = await rawPost(h.base, '/api/ingest/v1/sync', bomb, { 'content-type': 'application/json', 'content-encoding': 'gzip', authorization: `Bearer ${apiKey}` })
    t.equal(res.status, 400)
    t.equal(res.body.code, 'invalid_payload')
    t.match(res.body.error, /inflated body is larger/)
    t.comment(`refused in ${Date.now() - started} ms`)
    const unauthenticated = await rawPost(h.base, '/api/ingest/v1/sync', bomb, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
    t.equal(unauthenticated.status, 401, 'without a key the body is never inflated')
    t.equal((await h.ingest('/heartbeat', heartbeatBody(), apiKey)).status, 200, 'still serving')
    t.equal((await h.call('GET', '/api/health')).status, 200)
  })

  t.test('malformed bodies answer 400 invalid_payload', async (t) => {
    const { apiKey } = await h.enrolled()
    const auth = { authorization: `Bearer ${apiKey}` }
    const cases: Array<[string, Buffer | string, Record<string, string>]> = [
      ['malformed JSON', '{"protocolVersion": 1,', { 'content-type': 'application/json' }],
      ['empty JSON body', '', { 'content-type': 'application/json' }],
      ['not gzip at all', 'plainly not gzip', { 'content-type': 'application/json', 'content-encoding': 'gzip' }],
      ['truncated gzip', gzipSync(JSON.stringify(heartbeatBody())).subarray(0, 20), { 'content-type': 'application/json', 'content-encoding': 'gzip' }],
      ['gzip of malformed JSON', gzipSync('{"a":'), { 'content-type': 'application/json', 'content-encoding': 'gzip' }],
      ['unknown encoding', JSON.stringify(heartbeatBody()), { 'content-type': 'application/json', 'content-encoding': 'zstd-ish' }],
      ['text, not JSON', 'hello', { 'content-type': 'text/plain' }],
      ['JSON null', 'null', { 'content-type': 'application/json' }],
      ['prototype poisoning', '{"__proto__": {"admin": true}, "protocolVersion": 1}', { 'content-type': 'application/json' }],
    ]
    for (const [name, body, headers] of cases) {
      const res = await rawPost(h.base, '/api/ingest/v1/heartbeat', body, { ...headers, ...auth })
      t.equal(res.status, 400, name)
      t.equal(res.body?.code, 'invalid_payload', name)
      t.same(
        Object.keys(res.body ?? {})
          .filter((k) => k !== 'details')
          .sort(),
        ['code', 'error'],
        `${name}: {error, code}`,
      )
    }
    const enroll = await rawPost(h.base, '/api/ingest/v1/enroll', '{nope', { 'content-type': 'application/json' })
    t.equal(enroll.status, 400)
    t.equal((await h.ingest('/heartbeat', heartbeatBody(), apiKey)).status, 200, 'still serving')
  })

  t.test('odd bodies and ids never answer 500, and every error is {error, code}', async (t) => {
    const { apiKey, instancePk, enrollmentId } = await h.enrolled()
    const targets: Array<[string, string, string | null]> = [
      ['POST', '/api/ingest/v1/enroll', null],
      ['POST', '/api/ingest/v1/enroll/poll', null],
      ['POST', '/api/ingest/v1/heartbeat', apiKey],
      ['POST', '/api/ingest/v1/sync', apiKey],
      ['POST', '/api/ingest/v1/manifest', apiKey],
      ['POST', `/api/admin/instances/${instancePk}/directives`, ADMIN_KEY],
      ['POST', '/api/admin/directives', ADMIN_KEY],
      ['POST', '/api/admin/auto-approve-rules', ADMIN_KEY],
      ['PUT', '/api/admin/limits', ADMIN_KEY],
      ['PUT', `/api/admin/instances/${instancePk}/limits`, ADMIN_KEY],
      ['PUT', '/api/admin/skills/some-skill', ADMIN_KEY],
      ['POST', `/api/admin/enrollments/${enrollmentId}/reject`, ADMIN_KEY],
    ]
    const bodies = [undefined, 'null', '[]', '"text"', '42', '{}', '{"protocolVersion":1.5}', '{"protocolVersion":1e400}', '{"kind":"set_sync_interval","seconds":1e308}', '{"a":"\\u0000"}']
    for (const [method, path, key] of targets) {
      for (const raw of bodies) {
        const res = await h.call(method, path, { ...(raw !== undefined ? { raw, headers: { 'content-type': 'application/json' } } : {}), key })
        t.ok(res.status >= 400 && res.status < 500, `${method} ${path} ${raw}: ${res.status}`)
        t.equal(typeof res.body?.error, 'string')
        t.equal(typeof res.body?.code, 'string')
      }
    }
    const plainGet = await h.call('GET', '/api/ingest/v1/live')
    t.equal(plainGet.status, 400, 'a plain GET of the live channel')
    t.equal(plainGet.body.code, 'invalid_payload')
    for (const path of ['/api/admin/instances/%zz', '/api/admin/enrollments/1%20or%201=1', `/api/admin/instances/${'9'.repeat(600)}`]) {
      const res = await h.admin('GET', path.replace('/api/admin', ''))
      t.equal(res.status, 404, path.slice(0, 40))
      t.equal(res.body.code, 'not_found')
    }
  })

  t.test('auth errors', async (t) => {
    for (const authorization of [undefined, 'Bearer', 'Bearer nope', 'Basic abc', `Bearer ${'x'.repeat(600)}`]) {
      const res = await h.call('POST', '/api/ingest/v1/heartbeat', { body: heartbeatBody(), headers: authorization ? { authorization } : {} })
      t.equal(res.status, 401, String(authorization).slice(0, 20))
      t.same(res.body, { error: res.body.error, code: 'unauthorized' })
    }
    t.equal((await h.call('GET', '/api/ingest/v1/skills')).status, 401)
    t.equal((await h.call('GET', '/api/ingest/v1/skills/anything')).status, 401)
  })

  t.test('validation of enrollment fields', async (t) => {
    const bad: Array<[string, Record<string, unknown>]> = [
      ['machineId too short', { machineId: 'short' }],
      ['instanceId with a slash', { instanceId: 'a/b' }],
      ['instanceId too long', { instanceId: 'i'.repeat(65) }],
      ['unknown os', { os: 'plan9' }],
      ['slawVersion too long', { slawVersion: 'v'.repeat(33) }],
    ]
    for (const [name, override] of bad) {
      const res = await h.ingest('/enroll', enrollBody(identity(override as never)))
      t.equal(res.status, 400, name)
      t.equal(res.body.code, 'invalid_payload')
      t.ok(Array.isArray(res.body.details) && res.body.details.length > 0, `${name}: details`)
    }
    const noCapabilities = await h.ingest('/enroll', { protocolVersion: 1, instance: identity() })
    t.equal(noCapabilities.status, 200, 'capabilities default')
  })

  t.test('unknown routes and methods', async (t) => {
    const res = await h.call('GET', '/api/ingest/v1/nope')
    t.equal(res.status, 404)
    t.equal(res.body.code, 'not_found')
    t.equal((await h.call('DELETE', '/api/ingest/v1/sync')).status, 404)
  })
})

forEachBackend(
  t,
  { autoApprove: true, rateLimit: { ingest: { max: 3, timeWindowMs: 60_000 }, enroll: { max: 4, timeWindowMs: 60_000 }, admin: { max: 1000, timeWindowMs: 60_000 } } },
  async (t, h) => {
    t.test('rate limits answer 429 rate_limited with Retry-After', async (t) => {
      const a = await h.ingest('/enroll', enrollBody(identity()))
      const b = await h.ingest('/enroll', enrollBody(identity()))
      t.equal(a.status, 200)
      t.equal(b.status, 200)
      for (let i = 0; i < 3; i++) t.equal((await h.ingest('/heartbeat', heartbeatBody(), a.body.apiKey)).status, 200)
      const limited = await h.ingest('/heartbeat', heartbeatBody(), a.body.apiKey)
      t.equal(limited.status, 429)
      t.same(limited.body, { error: limited.body.error, code: 'rate_limited' })
      t.match(limited.headers.get('retry-after'), /^\d+$/)
      t.equal((await h.ingest('/heartbeat', heartbeatBody(), b.body.apiKey)).status, 200, 'another instance has its own budget')

      await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId: a.body.enrollmentId })
      await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId: a.body.enrollmentId })
      await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId: a.body.enrollmentId })
      await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId: a.body.enrollmentId })
      const polled = await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId: a.body.enrollmentId })
      t.equal(polled.status, 429)
      t.equal(polled.body.code, 'rate_limited')
      t.ok(polled.headers.get('retry-after'))
    })
  },
)
