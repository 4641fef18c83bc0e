import t, { type Test } from 'tap'
import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import { httpAdapter, verifyWakeSignature, type HttpWakeBody } from '@slaw/adapters'
import { wakeInput } from './helpers.js'

interface Received {
  headers: IncomingMessage['headers']
  raw: Buffer
  body: HttpWakeBody
}

/** A receiver whose answer each test decides; it records what arrived. */
async function receiver(t: Test, answer: (r: Received, res: ServerResponse) => void) {
  const received: Received[] = []
  const arrived: Array<() => void> = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const raw = Buffer.concat(chunks)
      const r = { headers: req.headers, raw, body: JSON.parse(raw.toString()) as HttpWakeBody }
      received.push(r)
      for (const a of arrived.splice(0)) a()
      answer(r, res)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks/agent?token=url-secret`,
    received,
    /** Resolves once `count` wakes have arrived. */
    arrivals: async (count: number) => {
      while (received.length < count) await new Promise<void>((r) => arrived.push(r))
    },
  }
}

t.test('2xx is accepted; the body carries the wake and exactly the env', async (t) => {
  const rx = await receiver(t, (_r, res) => res.writeHead(202).end('queued'))
  const input = wakeInput({ issueId: '0199aaaa-0000-7000-8000-000000000001', reason: 'issue_assigned', config: { url: rx.url, headers: { Authorization: 'Bearer agent-side' } } })
  const res = await httpAdapter().wake(input)
  t.equal(res.status, 'accepted')
  t.equal(res.httpStatus, 202)
  t.equal(res.output, 'queued')
  const [r] = rx.received
  t.same(r!.body.env, input.env, 'env is exactly input.env')
  t.match(r!.body, { runId: input.runId, agentId: input.agentId, squadId: input.squadId, issueId: input.issueId, reason: 'issue_assigned' })
  t.ok(!Number.isNaN(Date.parse(r!.body.sentAt)), 'sentAt is a timestamp')
  t.equal(r!.headers['content-type'], 'application/json')
  t.equal(r!.headers.authorization, 'Bearer agent-side', 'configured headers are sent')
  t.equal(r!.headers['x-svc-signature'], undefined, 'no signature without a signing secret')
})

t.test('the signature is the HMAC-SHA256 of the exact body and a receiver can verify it', async (t) => {
  const rx = await receiver(t, (_r, res) => res.writeHead(200).end())
  const secret = 'whsec_test_secret'
  await httpAdapter().wake(wakeInput({ signingSecret: secret, config: { url: rx.url, headers: { 'X-Svc-Signature': 'forged' } } }))
  const [r] = rx.received
  const header = r!.headers['x-svc-signature'] as string
  // What a receiver in any language does: HMAC the raw bytes, compare in constant time.
  const expected = `sha256=${createHmac('sha256', secret).update(r!.raw).digest('hex')}`
  t.equal(header, expected, 'configured headers cannot replace the signature')
  t.ok(timingSafeEqual(Buffer.from(header), Buffer.from(expected)))
  t.ok(verifyWakeSignature(secret, r!.raw, header), 'verifyWakeSignature accepts it')
  t.notOk(verifyWakeSignature('another secret', r!.raw, header), 'another secret does not verify')
  const tampered = Buffer.from(r!.raw.toString().replace(r!.body.reason, 'tampered'))
  t.notOk(verifyWakeSignature(secret, tampered, header), 'a changed body does not verify')
  t.notOk(verifyWakeSignature(secret, r!.raw, undefined), 'a missing header does not verify')
})

t.test('a non-2xx answer fails with its status, and redirects are not followed', async (t) => {
  const rx = await receiver(t, (r, res) => {
    if (r.body.reason === 'redirect') res.writeHead(302, { location: 'http://127.0.0.1:1/' }).end()
    else res.writeHead(503).end('overloaded')
  })
  const res = await httpAdapter().wake(wakeInput({ config: { url: rx.url } }))
  t.equal(res.status, 'failed')
  t.equal(res.httpStatus, 503)
  t.equal(res.output, 'overloaded')
  t.match(res.error, /^http:\/\/127\.0\.0\.1:\d+ answered HTTP 503$/)
  t.notOk(res.error!.includes('url-secret'), "the error names the origin, not the URL's token")
  const redirect = await httpAdapter().wake(wakeInput({ reason: 'redirect', config: { url: rx.url } }))
  t.equal(redirect.status, 'failed')
  t.equal(redirect.httpStatus, 302)
})

t.test('a target that is down fails with a clear error', async (t) => {
  const server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as { port: number }).port
  await new Promise<void>((r) => server.close(() => r()))
  const res = await httpAdapter().wake(wakeInput({ config: { url: `http://127.0.0.1:${port}/wake` } }))
  t.equal(res.status, 'failed')
  t.equal(res.httpStatus, null)
  t.equal(res.error, `http://127.0.0.1:${port} could not be reached: connection refused (nothing listens there)`)
  const dns = await httpAdapter().wake(wakeInput({ config: { url: 'http://agent.invalid/wake' } }))
  t.equal(dns.status, 'failed')
  t.match(dns.error, /could not be reached/)
})

t.test('a slow target fails after requestTimeoutMs; past the run timeout it is timed_out', async (t) => {
  const rx = await receiver(t, () => {}) // never answers
  const started = performance.now()
  const slow = await httpAdapter({ requestTimeoutMs: 200 }).wake(wakeInput({ timeoutMs: 60_000, config: { url: rx.url } }))
  t.equal(slow.status, 'failed')
  t.match(slow.error, /did not answer within 200 ms/)
  // Half: Node's timers start from the event loop's cached clock, which lags on a busy machine.
  t.ok(performance.now() - started >= 100, 'not (much) before requestTimeoutMs')
  const overRun = await httpAdapter({ requestTimeoutMs: 60_000 }).wake(wakeInput({ timeoutMs: 200, config: { url: rx.url } }))
  t.equal(overRun.status, 'timed_out')
  t.match(overRun.error, /run's timeout \(200 ms\)/)
})

t.test('abort cancels a wake in flight; close() cancels the rest and refuses new wakes', async (t) => {
  const rx = await receiver(t, () => {})
  const ac = new AbortController()
  const adapter = httpAdapter()
  const wake = adapter.wake(wakeInput({ signal: ac.signal, config: { url: rx.url } }))
  await rx.arrivals(1)
  ac.abort()
  const res = await wake
  t.equal(res.status, 'cancelled')
  t.match(res.error, /cancelled/)

  const pending = adapter.wake(wakeInput({ config: { url: rx.url } }))
  await rx.arrivals(2)
  await adapter.close!()
  t.equal((await pending).status, 'cancelled')
  t.equal((await adapter.wake(wakeInput({ config: { url: rx.url } }))).status, 'cancelled')
})

t.test('a megabyte answer keeps a bounded tail', async (t) => {
  const rx = await receiver(t, (_r, res) => {
    res.writeHead(200)
    for (let i = 0; i < 64; i++) res.write(Buffer.alloc(64 * 1024, 'y'))
    res.end('\nend of answer')
  })
  const res = await httpAdapter().wake(wakeInput({ config: { url: rx.url } }))
  t.equal(res.status, 'accepted')
  t.ok(Buffer.byteLength(res.output!) <= 64 * 1024)
  t.ok(res.output!.endsWith('\nend of answer'))
})

t.test('validateConfig', async (t) => {
  const v = httpAdapter().validateConfig!
  t.same(v({ url: 'https://agents.example.com/wake', headers: { Authorization: 'Bearer x' }, timeoutSec: 600 }), [])
  t.same(
    v({}).map((d) => d.path),
    ['/url'],
  )
  t.same(
    v({ url: 'ftp://example.com' }).map((d) => d.path),
    ['/url'],
  )
  t.same(
    v({ url: 'not a url' }).map((d) => d.path),
    ['/url'],
  )
  t.same(
    v({ url: 'http://x', headers: { 'X-Svc-Signature': 'a', 'bad name': 'b', 'X-Ok': 3, 'X-Split': 'a\r\nb' }, timeoutSec: -1 }).map((d) => d.path),
    ['/headers/X-Svc-Signature', '/headers/bad name', '/headers/X-Ok', '/headers/X-Split', '/timeoutSec'],
  )
  t.same(
    v({ url: 'http://x', headers: [] }).map((d) => d.path),
    ['/headers'],
  )
})

t.test('a run timeout longer than a timer can hold does not fire at once', async (t) => {
  const rx = await receiver(t, (_r, res) => setImmediate(() => res.writeHead(200).end()))
  const res = await httpAdapter({ requestTimeoutMs: 40 * 86_400_000 }).wake(wakeInput({ timeoutMs: 40 * 86_400_000, config: { url: rx.url } }))
  t.equal(res.status, 'accepted')
})
