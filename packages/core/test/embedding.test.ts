import { Writable } from 'node:stream'
import t, { type Test } from 'tap'
import pino from 'pino'
import { createInstance, systemActor, type InstanceOptions } from '@slaw/core'
import { processAdapter } from '@slaw/adapters'
import { backends } from './helpers/backends.js'
import { operatorToken, testMasterKey } from './helpers/instance.js'

// A host that embeds slaw: runs happen without HTTP, agents are told where the API is only when
// something serves it, and the host observes a run with waitFor (docs/getting-started.md).

const host = systemActor('host-app')
// The agent prints where it would call back, then exits 0.
const agentScript = "console.log('api=' + (process.env.SVC_API_URL ?? 'none'))"

async function embedded(t: Test, backend: (typeof backends)[number], extra: Partial<InstanceOptions> = {}) {
  const { storage, dispose } = await backend.create()
  const lines: string[] = []
  const logger = pino({ level: 'warn' }, new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }))
  const instance = await createInstance({ storage, operatorKey: operatorToken, masterKey: testMasterKey, adapters: [processAdapter()], logger, ...extra })
  t.teardown(async () => {
    await instance.close()
    await dispose()
  })
  const squad = await instance.services.squads.create(host, { name: `Host ${Math.random().toString(36).slice(2, 8)}` })
  const agent = await instance.services.agents.create(host, squad.id, {
    name: 'ada',
    role: 'engineer',
    adapterType: 'process',
    adapterConfig: { command: process.execPath, args: ['-e', agentScript] },
  })
  return { instance, squad, agent, lines }
}

for (const backend of backends) {
  t.test(`services only (no ready, listen or inject): a wake runs, and waitFor sees it end [${backend.name}]`, backend.skip ? { skip: backend.skip } : {}, async (t) => {
    const { instance, agent, lines } = await embedded(t, backend)
    const queued = await instance.services.runs.wake(host, agent.id, { reason: 'manual' })
    t.equal(queued.status, 'queued')
    const run = await instance.services.runs.waitFor(host, queued.id, { timeoutMs: 30_000 })
    t.equal(run.status, 'succeeded', `the run ran without HTTP (${run.error ?? ''})`)
    const full = await instance.services.runs.get(host, run.id)
    t.match(full.outputTail, /api=none/, 'the agent got no SVC_API_URL: nothing serves the API')
    t.ok(
      lines.some((l) => l.includes('without SVC_API_URL')),
      'and the host was told why, once',
    )
    t.equal((await instance.services.runs.waitFor(host, run.id)).id, run.id, 'waitFor on a finished run answers at once')
  })

  t.test(`listen() tells agents the address it bound; publicUrl wins when given [${backend.name}]`, backend.skip ? { skip: backend.skip } : {}, async (t) => {
    const { instance, agent } = await embedded(t, backend)
    const address = await instance.listen({ port: 0 })
    const run = await instance.services.runs.waitFor(host, (await instance.services.runs.wake(host, agent.id, {})).id, { timeoutMs: 30_000 })
    t.match((await instance.services.runs.get(host, run.id)).outputTail, `api=${address}`)

    const behindProxy = await embedded(t, backend, { publicUrl: 'https://slaw.example.test/' })
    const proxied = await behindProxy.instance.services.runs.waitFor(host, (await behindProxy.instance.services.runs.wake(host, behindProxy.agent.id, {})).id, { timeoutMs: 30_000 })
    t.match((await behindProxy.instance.services.runs.get(host, proxied.id)).outputTail, 'api=https://slaw.example.test', 'publicUrl, without its trailing slash')
  })

  t.test(`waitFor: a timeout, an abort and an unknown run [${backend.name}]`, backend.skip ? { skip: backend.skip } : {}, async (t) => {
    const { instance, agent } = await embedded(t, backend, { jobs: false })
    // jobs: false — nothing runs, so the run stays queued.
    const queued = await instance.services.runs.wake(host, agent.id, {})
    await t.rejects(instance.services.runs.waitFor(host, queued.id, { timeoutMs: 100, recheckMs: 20 }), { name: 'TimeoutError' })
    const abort = new AbortController()
    setTimeout(() => abort.abort(new Error('host shutting down')), 50)
    await t.rejects(instance.services.runs.waitFor(host, queued.id, { signal: abort.signal }), { message: 'host shutting down' })
    await t.rejects(instance.services.runs.waitFor(host, '00000000-0000-7000-8000-000000000000'), { code: 'not_found' })
  })
}
