import t, { type Test } from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import { networkInterfaces } from 'node:os'
import { performance } from 'node:perf_hooks'
import { classifyAddress, httpAdapter } from '@slaw/adapters'
import { wakeInput } from './helpers.js'

/** A real endpoint recording every request that reaches it. */
async function endpoint(t: Test, answer: (req: IncomingMessage, body: string) => { status: number; body: string }, host = '127.0.0.1') {
  const seen: string[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c))
    req.on('end', () => {
      seen.push(body)
      const a = answer(req, body)
      res.writeHead(a.status).end(a.body)
    })
  })
  await new Promise<void>((r) => server.listen(0, host, r))
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return { port: (server.address() as { port: number }).port, seen }
}

t.test('addresses are classified on the IP, IPv4-mapped IPv6 included', async (t) => {
  for (const [address, cls] of [
    ['169.254.169.254', 'link-local'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fd00:ec2::254', 'link-local'],
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['0.0.0.0', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.20.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['fd12::1', 'private'],
    ['100.100.100.200', 'private'],
    ['8.8.8.8', 'public'],
    ['2606:4700::1111', 'public'],
    ['224.0.0.1', 'multicast'],
  ] as const)
    t.equal(classifyAddress(address), cls, address)
})

t.test('link-local (cloud metadata) is refused by default, without connecting, literal or IPv4-mapped', async (t) => {
  for (const url of ['http://169.254.169.254/latest/meta-data/iam/security-credentials/', 'http://[::ffff:169.254.169.254]/', 'http://[fe80::1]:8080/']) {
    const started = performance.now()
    const res = await httpAdapter().wake(wakeInput({ config: { url } }))
    t.match(res, { status: 'failed', httpStatus: null, error: /was not called: .* link-local address .*egress policy/ }, url)
    t.ok(performance.now() - started < 1_000, 'refused at once, not after a connect attempt')
  }
})

t.test('the check runs on the RESOLVED address: a host name resolving to loopback is refused when loopback is', async (t) => {
  const ep = await endpoint(t, () => ({ status: 200, body: 'ok' }))
  const strict = httpAdapter({ egress: { loopback: false } })
  const byName = await strict.wake(wakeInput({ config: { url: `http://localhost:${ep.port}/wake` } }))
  t.match(byName, { status: 'failed', error: /localhost resolves to .* a loopback address/ })
  const byIp = await strict.wake(wakeInput({ config: { url: `http://127.0.0.1:${ep.port}/wake` } }))
  t.match(byIp, { status: 'failed', error: /was not called: 127\.0\.0\.1 is a loopback address/ })
  t.equal(ep.seen.length, 0, 'the endpoint received nothing, so no run token')
  const priv = await httpAdapter({ egress: { privateNetworks: false } }).wake(wakeInput({ config: { url: 'http://10.255.255.1:9/wake' } }))
  t.match(priv, { status: 'failed', error: /private-network address/ })
  // Default: loopback allowed (agents on the same host; the adapter kit's probe listens there).
  t.match(await httpAdapter().wake(wakeInput({ config: { url: `http://localhost:${ep.port}/wake` } })), { status: 'accepted' })
  t.equal(ep.seen.length, 1)
})

t.test('a non-2xx answer keeps only its first line, scrubbed of the run token and bindings, clipped', async (t) => {
  const ep = await endpoint(t, (_req, body) => ({
    status: 500,
    body: `Internal error ${JSON.parse(body).env.SVC_API_KEY} ${JSON.parse(body).env.DB_PASSWORD} ${'x'.repeat(500)}\nstack line 1\n${body}`,
  }))
  const input = wakeInput({ config: { url: `http://127.0.0.1:${ep.port}/wake` } })
  input.env.DB_PASSWORD = 'binding-value-hunter2'
  const res = await httpAdapter().wake(input)
  t.equal(res.status, 'failed')
  t.equal(res.httpStatus, 500)
  t.notMatch(res.output!, input.env.SVC_API_KEY!, 'no run token')
  t.notMatch(res.output!, 'binding-value-hunter2', 'no binding value')
  t.notMatch(res.output!, /stack line/, 'only the first line')
  t.ok(res.output!.length <= 201, `short (${res.output!.length} characters)`)
  t.match(res.output!, /^Internal error \[REDACTED\] \[REDACTED\] x+…$/)
})

t.test('plain http to a host other than loopback is warned about (once per origin); loopback is not', async (t) => {
  const warnings: string[] = []
  const adapter = httpAdapter({ warn: (m) => warnings.push(m) })
  const ep = await endpoint(t, () => ({ status: 202, body: '' }), '0.0.0.0')
  await adapter.wake(wakeInput({ config: { url: `http://127.0.0.1:${ep.port}/` } }))
  t.same(warnings, [], 'loopback: no warning')
  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal && classifyAddress(i.address) !== 'link-local')
  if (!external) {
    t.comment('no non-loopback IPv4 interface on this machine: the warning to another host is not exercised')
    return
  }
  const url = `http://${external.address}:${ep.port}/`
  t.match(await adapter.wake(wakeInput({ config: { url } })), { status: 'accepted' })
  await adapter.wake(wakeInput({ config: { url } }))
  t.equal(warnings.length, 1, 'one warning for the origin')
  t.match(warnings[0], /over plain http sends the run token .* unencrypted/)
})
