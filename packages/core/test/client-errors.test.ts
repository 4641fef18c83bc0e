import t from 'tap'
import { connect } from 'node:net'
import { createInstance } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'

// Requests Node's HTTP parser rejects never reach a route; they still get the `{error, code}` body.
t.test('client errors answer with the error body', async (t) => {
  const instance = await createInstance({ storage: await pgliteStorage({ dataDir: 'memory://' }), operatorKey: 'slaw_op_client_errors_test_0001', logger: false, jobs: false })
  t.teardown(() => instance.close())
  const address = new URL(await instance.listen({ port: 0 }))

  /** Sends raw bytes; resolves with everything the server wrote before it closed the connection. */
  const rawRequest = (bytes: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(Number(address.port), address.hostname)
      let out = ''
      socket.on('data', (c) => (out += c))
      socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? resolve(out) : reject(err)))
      socket.on('close', () => resolve(out))
      socket.write(bytes)
    })
  const parse = (raw: string) => {
    const [head, body] = raw.split('\r\n\r\n')
    return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1]), contentType: /content-type: ([^\r\n]+)/i.exec(head ?? '')?.[1], body: JSON.parse(body ?? 'null') }
  }

  const big = parse(await rawRequest(`GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`))
  t.equal(big.status, 431)
  t.match(big.contentType, /^application\/json/)
  t.same(big.body, { error: 'The request headers are too large.', code: 'header_too_large' })

  const badHeader = parse(await rawRequest('GET /api/health HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n'))
  t.equal(badHeader.status, 400)
  t.same(badHeader.body, { error: 'The request is not valid HTTP.', code: 'invalid_payload' })

  const badLine = parse(await rawRequest('THIS IS NOT HTTP\r\n\r\n'))
  t.equal(badLine.status, 400)
  t.same(badLine.body, { error: 'The request is not valid HTTP.', code: 'invalid_payload' })

  // The server still serves afterwards.
  const health = await fetch(new URL('/api/health', address))
  t.equal(health.status, 200)
})
