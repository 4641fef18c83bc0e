import t, { type Test } from 'tap'
import { createInstance } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { processAdapter } from '@slaw/adapters'
import { runsTail, status, type Output } from '../src/status.js'

// `slaw status` and `slaw runs tail` against a real instance over HTTP.

const key = 'slaw_op_status_test_key_000001'

function capture(): Output & { lines: string[]; errors: string[] } {
  const lines: string[] = []
  const errors: string[] = []
  return { lines, errors, out: (l) => lines.push(l), err: (l) => errors.push(l) }
}

async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

async function instanceWithAgent(t: Test, script: string) {
  const instance = await createInstance({ storage: await pgliteStorage({ dataDir: 'memory://' }), operatorKey: key, adapters: [processAdapter()], logger: false })
  t.teardown(() => instance.close())
  const url = await instance.listen({ port: 0, host: '127.0.0.1' })
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    })
    return (await res.json()) as any
  }
  const squad = (await call('POST', '/api/squads', { name: 'Platform' })).squad
  const agent = (await call('POST', `/api/squads/${squad.id}/agents`, { name: 'ada', role: 'engineer', adapterType: 'process', adapterConfig: { command: process.execPath, args: ['-e', script] } }))
    .agent
  return { url, call, squad, agent }
}

t.test('status: health, the squad, and the run in flight', async (t) => {
  const { url, call, squad, agent } = await instanceWithAgent(t, "console.log('working'); setTimeout(() => {}, 4000)")
  await call('POST', `/api/squads/${squad.id}/issues`, { title: 'Rotate the certificates' })
  await call('POST', `/api/agents/${agent.id}/wake`, {})
  await until('a running run', () => false, 0).catch(() => undefined)
  const io = capture()
  // Wait for the run to start, then read the status.
  await until('the run to be running', () => true)
  let code = 0
  for (let i = 0; i < 200; i += 1) {
    io.lines.length = 0
    code = await status(['--url', url, '--key', key], {}, io)
    if (io.lines.some((l) => / running {2}ada/.test(l))) break
    await new Promise((r) => setTimeout(r, 50))
  }
  t.equal(code, 0, 'exit 0 for a healthy instance')
  t.match(io.lines[0], new RegExp(`^slaw at ${url.replace(/\./g, '\\.')}: ok — storage ok, locks ok`), 'the health line names every part')
  t.ok(io.lines.includes('squad Platform'), 'the squad is listed')
  t.ok(
    io.lines.some((l) => /^ {2}agents {3}\d+ active, 1 running, 0 paused, 0 error$/.test(l)),
    `an agent with a run in flight counts as running (${io.lines.join(' / ')})`,
  )
  t.ok(
    io.lines.some((l) => /^ {2}issues {3}1 open/.test(l)),
    'issues by status',
  )
  t.ok(
    io.lines.some((l) => /^ {2}run [0-9a-f]{8} {2}running {2}ada {2}manual {2}running for \d+ s$/.test(l)),
    'the running run, with its agent and reason',
  )
})

t.test('status: an unreachable instance exits 1; no key is a usage error', async (t) => {
  const io = capture()
  t.equal(await status(['--url', 'http://127.0.0.1:9', '--key', key], {}, io), 1)
  t.match(io.errors[0], /^slaw at http:\/\/127\.0\.0\.1:9: not reachable/)
  await t.rejects(status(['--url', 'http://127.0.0.1:9'], {}, capture()), { name: 'UsageError' })
})

t.test('runs tail: a run queued, started, its output and its end, live', async (t) => {
  const { url, call, agent } = await instanceWithAgent(t, "console.log('hello from ada'); console.log('second line')")
  const io = capture()
  const stop = new AbortController()
  const tail = runsTail(['--url', url, '--key', key], {}, io, stop.signal)
  // The stream is open once the server has sent its first bytes; a wake made before would be missed.
  await new Promise((r) => setTimeout(r, 300))
  await call('POST', `/api/agents/${agent.id}/wake`, {})
  await until('the run to finish', () => io.lines.some((l) => / run\.finished ada succeeded$/.test(l)))
  stop.abort()
  t.equal(await tail.catch(() => 0), 0)
  const kinds = io.lines.map((l) => l.split(' ')[2])
  t.ok(kinds.indexOf('run.queued') < kinds.indexOf('run.started'), `queued before started (${io.lines.join(' / ')})`)
  t.ok(
    io.lines.some((l) => /\| hello from ada$/.test(l)),
    'the output, line by line',
  )
  t.ok(io.lines.some((l) => /\| second line$/.test(l)))
})
