import t from 'tap'
import { createServer } from 'node:http'
import { httpAdapter, processAdapter } from '@slaw/adapters'

const base = { timeoutMs: 30_000, graceMs: 1_000, runId: 'r1', agentId: 'a1', squadId: 's1', issueId: null, reason: 'test', env: { SVC_RUN_ID: 'r1', SVC_API_KEY: 'k' } }

t.test('process adapter passes the wake env and reads the last-line report', async (t) => {
  const script = "console.log('working'); console.log(JSON.stringify({ usage: { model: 'm', inputTokens: 1, outputTokens: 2, costCents: 3 }, liveness: process.env.SVC_RUN_ID === 'r1' ? 'completed' : 'failed' }))"
  const res = await processAdapter().wake({ ...base, config: { command: process.execPath, args: ['-e', script] }, signal: new AbortController().signal })
  t.equal(res.status, 'succeeded')
  t.equal(res.liveness, 'completed')
  t.same(res.usage, { model: 'm', inputTokens: 1, outputTokens: 2, costCents: 3 })
  const failed = await processAdapter().wake({ ...base, config: { command: process.execPath, args: ['-e', 'process.exit(3)'] }, signal: new AbortController().signal })
  t.equal(failed.status, 'failed')
  t.match(failed.error, /exit code 3/)
  const none = await processAdapter().wake({ ...base, config: {}, signal: new AbortController().signal })
  t.equal(none.status, 'failed')
})

t.test('process adapter cancels on abort', async (t) => {
  const ac = new AbortController()
  const p = processAdapter().wake({ ...base, config: { command: process.execPath, args: ['-e', 'setTimeout(() => {}, 10000)'] }, signal: ac.signal })
  setTimeout(() => ac.abort(), 100)
  t.equal((await p).status, 'cancelled')
})

t.test('http adapter posts the wake', async (t) => {
  let received: any
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      received = JSON.parse(body)
      res.writeHead(received.reason === 'fail' ? 500 : 200, { 'content-type': 'application/json' }).end(JSON.stringify({ liveness: 'advanced' }))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => server.close())
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/wake`
  const ok = await httpAdapter().wake({ ...base, config: { url }, signal: new AbortController().signal })
  t.equal(ok.status, 'succeeded')
  t.equal(ok.liveness, 'advanced')
  t.equal(received.env.SVC_RUN_ID, 'r1')
  const bad = await httpAdapter().wake({ ...base, reason: 'fail', config: { url }, signal: new AbortController().signal })
  t.equal(bad.status, 'failed')
  const unreachable = await httpAdapter({ timeoutMs: 500 }).wake({ ...base, config: { url: 'http://127.0.0.1:1/x' }, signal: new AbortController().signal })
  t.equal(unreachable.status, 'failed')
})
