import t from 'tap'
import { Type, adapterConfigProblems, defineAgentAdapter, type AgentAdapter } from '@slaw/core'
import { eachBackend } from './helpers/instance.js'

// An adapter declares its config as a TypeBox schema: slaw checks written configs against it (with
// the adapter's own validateConfig), and its wake gets the config typed, with the schema's defaults.

const schema = Type.Object(
  {
    command: Type.String({ pattern: '\\S', errorMessage: 'a shell agent needs a command' }),
    retries: Type.Integer({ minimum: 0, maximum: 5, default: 2, errorMessage: 'retries is a whole number from 0 to 5' }),
    tags: Type.Array(Type.String(), { default: [] }),
  },
  { additionalProperties: false },
)

function shellAdapter(seen: Array<{ command: string; retries: number; tags: string[]; timeoutSec: number | undefined }> = []): AgentAdapter {
  return defineAgentAdapter({
    type: 'shell',
    configSchema: schema,
    // A rule a schema cannot say: no command under /tmp.
    validateConfig: (config) => (typeof config.command === 'string' && config.command.startsWith('/tmp/') ? [{ path: '/command', message: 'a command under /tmp is refused' }] : []),
    async wake(input) {
      // Typed, no casts: command is a string, retries a number (its default when not set), tags a string[].
      seen.push({ command: input.config.command.trim(), retries: input.config.retries + 0, tags: [...input.config.tags], timeoutSec: input.config.timeoutSec })
      return { status: 'succeeded' }
    },
  })
}

t.test('defineAgentAdapter: validateConfig reports the schema and the adapter, wake gets defaults', async (t) => {
  const seen: Array<{ command: string; retries: number; tags: string[]; timeoutSec: number | undefined }> = []
  const adapter = shellAdapter(seen)
  const v = adapter.validateConfig!
  t.same(v({ command: 'run.sh' }), [], 'defaulted keys may be left out')
  t.same(v({ command: 'run.sh', env: { A: 'b' }, timeoutSec: 60, graceSec: 5 }), [], "the engine's keys are allowed although the schema says additionalProperties: false")
  t.same(v({}), [{ path: '/command', message: 'a shell agent needs a command' }], "a missing required key: one detail, the schema's message")
  t.same(
    v({ command: '/tmp/x', retries: 9, tags: ['a', 3], extra: 1 }),
    [
      { path: '/command', message: 'a command under /tmp is refused' },
      { path: '/extra', message: 'Unexpected property' },
      { path: '/retries', message: 'retries is a whole number from 0 to 5' },
      { path: '/tags/1', message: 'Expected string' },
    ],
    "the adapter's own details and one per schema problem, TypeBox's wording where the schema gives none",
  )
  t.same(v({ command: 'x', timeoutSec: 0 }), [{ path: '/timeoutSec', message: 'timeoutSec must be an integer from 1 to 86400' }], "the engine's keys keep the engine's rule and message")

  const input = { runId: 'r', agentId: 'a', squadId: 's', issueId: null, reason: 'test', env: {}, timeoutMs: 1000, graceMs: 100, signal: new AbortController().signal }
  const stored = { command: 'run.sh', timeoutSec: 30 }
  t.equal((await adapter.wake({ ...input, config: stored })).status, 'succeeded')
  t.same(seen, [{ command: 'run.sh', retries: 2, tags: [], timeoutSec: 30 }], 'wake saw the defaults')
  t.same(stored, { command: 'run.sh', timeoutSec: 30 }, 'the stored config is not changed')
  const bad = await adapter.wake({ ...input, config: { retries: 'x' } })
  t.equal(bad.status, 'failed', 'a stored config the schema refuses is not run')
  t.match(bad.error, /adapterConfig\/command: a shell agent needs a command; adapterConfig\/retries: retries is a whole number/)
  t.equal(seen.length, 1)
})

t.test("defineAgentAdapter refuses a default on the engine's keys", async (t) => {
  t.throws(
    () => defineAgentAdapter({ type: 'x', configSchema: Type.Object({ timeoutSec: Type.Integer({ default: 60 }) }), wake: async () => ({ status: 'succeeded' }) }),
    /timeoutSec is read by the run engine/,
  )
})

t.test('a hand-written adapter with only a configSchema is checked too', async (t) => {
  const adapter: AgentAdapter = { type: 'plain', configSchema: Type.Object({ url: Type.String({ errorMessage: 'url is required' }) }), wake: async () => ({ status: 'succeeded' }) }
  t.same(adapterConfigProblems(adapter, {}), [{ path: '/url', message: 'url is required' }])
  t.same(adapterConfigProblems(adapter, { url: 'x' }), [])
})

const seen: Array<{ command: string; retries: number; tags: string[]; timeoutSec: number | undefined }> = []
eachBackend(
  t,
  'a written adapterConfig is checked against the schema; a run wakes with its defaults',
  async (t, api) => {
    const squad = (await api.call('POST', '/api/squads', { name: 'Schemas' })).body.squad
    const bad = await api.call('POST', `/api/squads/${squad.id}/agents`, {
      name: 'b',
      role: 'r',
      adapterType: 'shell',
      adapterConfig: { command: '/tmp/x', retries: -1, timeoutSec: 0, env: { '1BAD': 'x' } },
    })
    t.equal(bad.status, 400)
    t.equal(bad.body.code, 'invalid_payload')
    t.same(
      bad.body.details,
      [
        { path: '/adapterConfig/env/1BAD', message: 'an env name is letters, digits and _ and does not start with a digit' },
        { path: '/adapterConfig/timeoutSec', message: 'timeoutSec must be an integer from 1 to 86400' },
        { path: '/adapterConfig/command', message: 'a command under /tmp is refused' },
        { path: '/adapterConfig/retries', message: 'retries is a whole number from 0 to 5' },
      ],
      "the engine's details, then the adapter's and the schema's, each problem once",
    )
    const created = await api.call('POST', `/api/squads/${squad.id}/agents`, { name: 'ok', role: 'r', adapterType: 'shell', adapterConfig: { command: 'run.sh' } })
    t.equal(created.status, 201)
    t.same(created.body.agent.adapterConfig, { command: 'run.sh' }, 'stored as written, defaults not written in')
    const patched = await api.call('PATCH', `/api/agents/${created.body.agent.id}`, { adapterConfig: { retries: 'many' } })
    t.equal(patched.status, 400, 'PATCH is checked too')
    t.same(patched.body.details, [{ path: '/adapterConfig/retries', message: 'retries is a whole number from 0 to 5' }])
    seen.length = 0
    const run = (await api.call('POST', `/api/agents/${created.body.agent.id}/wake`, {})).body.run
    await api.instance.jobs.drain()
    t.equal((await api.call('GET', `/api/heartbeat-runs/${run.id}`)).body.run.status, 'succeeded')
    t.same(seen, [{ command: 'run.sh', retries: 2, tags: [], timeoutSec: undefined }], 'the run engine woke it with the schema defaults')
  },
  () => ({ adapters: [shellAdapter(seen)], jobs: false }),
)
