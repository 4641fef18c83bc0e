import t from 'tap'
import { createServer } from 'node:net'
import { httpAdapter, processAdapter } from '@slaw/adapters'
import type { InstanceOptions } from '@slaw/core'
import { eachBackend, type TestApi } from './helpers/instance.js'

// The shipped adapters behind the run engine, for faults the issue names: a command that prints
// megabytes, an http target that is down. (Hanging agents and slow targets end by the run deadline:
// run-engine.test.ts; a command that does not exist is the adapter contract kit's check.)
const options = (): Partial<InstanceOptions> => ({ adapters: [processAdapter(), httpAdapter()], jobs: false })

async function agentWith(api: TestApi, adapterType: string, adapterConfig: Record<string, unknown>) {
  const squad = (await api.call('POST', '/api/squads', { name: `Adapters ${Math.random().toString(36).slice(2, 8)}` })).body.squad
  const res = await api.call('POST', `/api/squads/${squad.id}/agents`, { name: 'ada', role: 'r', adapterType, adapterConfig })
  if (res.status !== 201) throw new Error(JSON.stringify(res.body))
  return res.body.agent.id as string
}

async function wakeAndRun(api: TestApi, agentId: string) {
  const run = (await api.call('POST', `/api/agents/${agentId}/wake`, {})).body.run
  await api.instance.jobs.drain()
  return (await api.call('GET', `/api/heartbeat-runs/${run.id}`)).body.run
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

eachBackend(
  t,
  'shipped adapters: megabytes of output, http target down',
  async (t, api) => {
    const loud = await wakeAndRun(api, await agentWith(api, 'process', { command: process.execPath, args: ['-e', "process.stdout.write('x'.repeat(4 * 1024 * 1024))"] }))
    t.equal(loud.status, 'succeeded', 'megabytes of output do not break the run')
    t.ok(loud.outputTail === null || loud.outputTail.length <= 65_536, 'the stored output is a bounded tail')

    const down = await wakeAndRun(api, await agentWith(api, 'http', { url: `http://127.0.0.1:${await closedPort()}/wake` }))
    t.equal(down.status, 'failed', 'an http target that is down fails the run')
    t.ok(down.error)
  },
  options,
)

// An adapter's validateConfig answers 400 with its details, on create, hire and PATCH.
const checked = {
  type: 'checked',
  validateConfig: (c: Record<string, unknown>) => (typeof c.url === 'string' ? [] : [{ path: '/url', message: 'url is required' }]),
  wake: async () => ({ status: 'succeeded' as const }),
}
eachBackend(
  t,
  "adapterConfig is checked by the adapter's validateConfig",
  async (t, api) => {
    const squad = (await api.call('POST', '/api/squads', { name: 'Checked' })).body.squad
    const bad = await api.call('POST', `/api/squads/${squad.id}/agents`, { name: 'c', role: 'r', adapterType: 'checked', adapterConfig: {} })
    t.equal(bad.status, 400)
    t.same(bad.body.details, [{ path: '/adapterConfig/url', message: 'url is required' }])
    const unconfigured = await api.call('POST', `/api/squads/${squad.id}/agents`, { name: 'u', role: 'r', adapterType: 'checked' })
    t.equal(unconfigured.status, 201, 'no adapterConfig at all (it is optional in the create body): created unconfigured')
    const hire = await api.call('POST', `/api/squads/${squad.id}/agent-hires`, { name: 'h', role: 'r', adapterType: 'checked', adapterConfig: { nope: 1 } })
    t.equal(hire.status, 400, 'hire requests too')
    const ok = await api.call('POST', `/api/squads/${squad.id}/agents`, { name: 'c', role: 'r', adapterType: 'checked', adapterConfig: { url: 'http://x' } })
    t.equal(ok.status, 201)
    const cleared = await api.call('PATCH', `/api/agents/${ok.body.agent.id}`, { adapterConfig: { url: null } })
    t.equal(cleared.status, 400, 'removing a required key is refused')
    t.same((await api.call('GET', `/api/agents/${ok.body.agent.id}`)).body.agent.adapterConfig, { url: 'http://x' }, 'nothing half-written')
  },
  { adapters: [checked], jobs: false },
)
