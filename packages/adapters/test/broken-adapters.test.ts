import t from 'tap'
import { Type, defineAgentAdapter, type AdapterWakeInput, type AdapterWakeResult, type AgentAdapter } from '@slaw/core'
import { httpAdapter, processAdapter } from '@slaw/adapters'
import { adapterContract, adapterContractChecks, contractAgentSource, type AdapterContractOptions } from '@slaw/core/testing'
import { contractReceiver } from './helpers.js'
import { recordingTest } from './recording-test.js'

// Each deliberately broken adapter breaks one rule of the contract. Run through the kit, it must fail
// exactly the check named for that rule and pass every other one: the kit's checks are precise.
// They are built on the http adapter (an in-process agent, so the suite stays quick) and, for the
// environment, on the process adapter too.

type Check = (typeof adapterContractChecks)[number]
const [typeCheck, succeedCheck, failureCheck, envCheck, timeoutCheck, abortCheck, outputCheck, validateCheck, closeCheck, defaultsValidCheck, defaultsSeenCheck] = adapterContractChecks

/** An http agent's config plus a `retries` the schema defaults to 2 (the kit's receiver configs never set it). */
const retriesSchema = Type.Object({ url: Type.String(), retries: Type.Integer({ minimum: 0, maximum: 5, default: 2 }) })

/** An http adapter whose results pass through `map`. */
function mapped(map: (r: AdapterWakeResult) => AdapterWakeResult): AgentAdapter {
  const inner = httpAdapter()
  return { ...inner, wake: async (input) => map(await inner.wake(input)) }
}

const broken: Array<{ name: string; fails: Check; make: () => AgentAdapter; process?: boolean }> = [
  { name: 'has an empty type', fails: typeCheck, make: () => ({ ...httpAdapter(), type: '' }) },
  {
    name: 'reports a success as a failure',
    fails: succeedCheck,
    make: () => mapped((r) => (r.status === 'accepted' ? { status: 'failed', error: 'oops' } : r)),
  },
  {
    name: 'throws for an agent failure',
    fails: failureCheck,
    make: () =>
      mapped((r) => {
        if (r.status === 'failed') throw new Error(r.error)
        return r
      }),
  },
  {
    name: "passes the server's environment on",
    fails: envCheck,
    make: () => {
      const inner = httpAdapter()
      return { ...inner, wake: (input: AdapterWakeInput) => inner.wake({ ...input, env: { ...(process.env as Record<string, string>), ...input.env } }) }
    },
  },
  { name: 'spawns with the server environment', fails: envCheck, make: () => processAdapter({ inheritEnv: Object.keys(process.env) }), process: true },
  { name: 'reports a timeout as a failure', fails: timeoutCheck, make: () => mapped((r) => (r.status === 'timed_out' ? { ...r, status: 'failed' } : r)) },
  { name: 'reports a cancel as a failure', fails: abortCheck, make: () => mapped((r) => (r.status === 'cancelled' ? { ...r, status: 'failed' } : r)) },
  {
    name: 'answers cancelled on abort but leaves the agent running',
    fails: abortCheck,
    make: () => {
      const inner = httpAdapter()
      return {
        ...inner,
        wake: (input: AdapterWakeInput) =>
          new Promise<AdapterWakeResult>((resolve) => {
            void inner.wake({ ...input, signal: new AbortController().signal }).then(resolve)
            input.signal.addEventListener('abort', () => resolve({ status: 'cancelled', error: 'cancelled' }), { once: true })
          }),
      }
    },
  },
  {
    name: 'claims a cost of 0 cents for usage it says nobody priced',
    fails: succeedCheck,
    make: () => mapped((r) => (r.status === 'accepted' ? { ...r, usage: { model: 'm', inputTokens: 10, outputTokens: 5, costCents: 0, costStatus: 'unpriced' } } : r)),
  },
  {
    name: 'hands back a session from a failed run',
    fails: failureCheck,
    make: () => mapped((r) => (r.status === 'failed' ? { ...r, session: { id: 'sess', key: 'k' } } : r)),
  },
  { name: 'keeps all the output', fails: outputCheck, make: () => httpAdapter({ outputTailBytes: 64 * 1024 * 1024 }) },
  {
    name: 'accepts any config',
    fails: validateCheck,
    make: () => {
      // Without its schema too: slaw checks a declared configSchema whatever validateConfig says.
      const { configSchema: _schema, ...rest } = httpAdapter()
      return { ...rest, validateConfig: () => [] }
    },
  },
  { name: 'stops nothing on close()', fails: closeCheck, make: () => ({ ...httpAdapter(), close: async () => {} }) },
  {
    // Hand-written around a schema instead of defineAgentAdapter: it reads the config as stored, so an
    // agent that never set retries gets 0 where the schema promises 2.
    name: 'declares a retries default in its schema that its wake never sees',
    fails: defaultsSeenCheck,
    make: () => {
      const inner = httpAdapter()
      return {
        ...inner,
        configSchema: retriesSchema,
        wake: (input: AdapterWakeInput) => {
          const retries = typeof input.config.retries === 'number' ? input.config.retries : 0
          return retries >= 0 ? inner.wake(input) : Promise.resolve({ status: 'failed', error: 'no retries left' })
        },
      }
    },
  },
  {
    name: 'declares a default its own schema refuses',
    fails: defaultsValidCheck,
    make: () => ({ ...httpAdapter(), configSchema: Type.Object({ url: Type.String(), retries: Type.Integer({ minimum: 1, maximum: 5, default: 0 }) }) }),
  },
]

for (const b of broken) {
  t.test(`a broken adapter that ${b.name} fails "${b.fails}" and only that`, async (t) => {
    const receiver = await contractReceiver(t)
    const options: AdapterContractOptions = b.process
      ? {
          configFor: (s) => (s.kind === 'unreachable' ? { command: '/nonexistent' } : { command: process.execPath, args: ['-e', contractAgentSource, JSON.stringify(s)] }),
          invalidConfigs: [{}],
        }
      : { acceptsRuns: true, configFor: receiver.configFor, invalidConfigs: [{}, { url: 'ftp://x' }] }
    // A guard only: it bounds how long the close() check waits for an adapter that never stops its agent.
    options.slackMs = 5_000
    options.timeoutMs = 300
    const rec = recordingTest()
    await adapterContract(rec.t, b.make, options)
    await rec.finish()
    t.same(
      rec.checks.map((c) => c.name),
      [...adapterContractChecks],
      'every check ran',
    )
    const failed = rec.checks.filter((c) => c.failures.length > 0)
    t.same(
      failed.map((c) => c.name),
      [b.fails],
      `only "${b.fails}" fails: ${JSON.stringify(failed.map((c) => [c.name, c.failures]))}`,
    )
    t.ok(
      rec.checks.every((c) => c.passes > 0 || c.failures.length > 0),
      'every check asserted something',
    )
  })
}

t.test('the same retries schema through defineAgentAdapter passes every check, and its wake sees the default, typed', async (t) => {
  const receiver = await contractReceiver(t)
  const seen: number[] = []
  const make = (): AgentAdapter => {
    const inner = httpAdapter()
    return defineAgentAdapter({
      type: 'http-retries',
      configSchema: retriesSchema,
      validateConfig: (config) => inner.validateConfig!(config),
      wake: (input) => {
        seen.push(input.config.retries)
        return inner.wake(input)
      },
      close: () => inner.close!(),
    })
  }
  const rec = recordingTest()
  await adapterContract(rec.t, make, { acceptsRuns: true, configFor: receiver.configFor, invalidConfigs: [{}, { url: 'ftp://x' }], timeoutMs: 300 })
  await rec.finish()
  t.same(
    rec.checks.filter((c) => c.failures.length).map((c) => [c.name, c.failures]),
    [],
  )
  t.ok(seen.length > 0 && seen.every((r) => r === 2), `every wake saw retries 2 (${JSON.stringify(seen)})`)
})

t.test('the unbroken http adapter passes every check through the same harness', async (t) => {
  const receiver = await contractReceiver(t)
  const rec = recordingTest()
  await adapterContract(rec.t, () => httpAdapter(), { acceptsRuns: true, configFor: receiver.configFor, invalidConfigs: [{}], timeoutMs: 300 })
  await rec.finish()
  t.same(
    rec.checks.filter((c) => c.failures.length).map((c) => [c.name, c.failures]),
    [],
  )
  t.equal(rec.checks.length, adapterContractChecks.length)
})
