import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { Value } from '@sinclair/typebox/value'
import { adapterConfigProblems, applyConfigDefaults, defaultedConfigProblems, schemaDefaults } from '../contracts/adapter-config.js'
import type { AdapterWakeInput, AdapterWakeResult, AgentAdapter } from '../contracts/agent-adapter.js'
import { gate, settle, within, type Gate, type Settled, type Within } from './async-helpers.js'
import type { AdapterScenario } from './contract-agent.js'
import type { ContractTest } from './contract-test.js'
import { startStandIn } from './stand-in.js'

/** Makes a fresh adapter. The kit closes every adapter it makes. */
export type MakeAdapter = () => Promise<AgentAdapter> | AgentAdapter

export interface AdapterContractOptions {
  /**
   * The adapter config that makes a well-behaved agent act out `scenario` (see `AdapterScenario`).
   * Called once per wake; may start what the agent needs (a receiver, a worker) and return its config.
   */
  configFor(scenario: AdapterScenario): Promise<Record<string, unknown>> | Record<string, unknown>
  /**
   * Configs the adapter must refuse (its `configSchema` or its `validateConfig`), each with at least
   * one detail. Without them the validateConfig check only proves that the scenario configs pass.
   */
  invalidConfigs?: Record<string, unknown>[]
  /**
   * The adapter hands a run off: a well-behaved agent's wake answers `accepted` once the agent
   * acknowledged it, and the agent finishes the run by reporting `final: true` (the http adapter).
   * Default false: the wake answers `succeeded` when the agent finished (the process adapter).
   */
  acceptsRuns?: boolean
  /** The timeout of the timeout check, in ms. Raise it if your agent takes long to start. Default 1500. */
  timeoutMs?: number
  /** `graceMs` of every wake. Default 1000. */
  graceMs?: number
  /**
   * The most output the adapter keeps, in bytes (the print check writes four times as much, at least
   * 1 MiB). Default 64 KiB.
   */
  maxOutputBytes?: number
  /**
   * How long the kit waits for anything before it calls a check failed instead of hanging: a guard,
   * never a performance bound. Default 30 s.
   */
  slackMs?: number
}

/** The names of the kit's checks, in order; a failing assertion is reported under one of them. */
export const adapterContractChecks = [
  'type is a non-empty string',
  'a well-behaved agent runs and the wake answers its success',
  'wake resolves, never throws, for an agent failure',
  "the agent gets exactly input.env and nothing of the server's environment",
  'past timeoutMs the agent is stopped and the wake answers timed_out',
  'an aborted signal stops the agent and the wake answers cancelled',
  'output is a bounded tail',
  'validateConfig returns details for a bad config and none for a good one',
  'close() stops every running agent',
  'the config schema accepts a config built from its own defaults',
  "wake sees the config schema's defaults",
] as const

/** Variables a server typically holds that must never reach an agent; the kit plants them. */
const serverSecrets = ['SVC_MASTER_KEY', 'DATABASE_URL', 'AWS_SECRET_ACCESS_KEY', 'SLAW_CONTRACT_SERVER_CANARY'] as const
/** A binding value with every character class a naive quoting would mangle. */
const trickyValue = `spaces "double" 'single' $HOME \`tick\` = ünïcødé ✓\nsecond line`
/** Long enough that only the kit's own signal or close() ends a wake. */
const longTimeoutMs = 10 * 60_000

/**
 * The contract every `AgentAdapter` keeps. Run it from the adapter's own tests:
 *
 * ```ts
 * import t from 'tap'
 * import { adapterContract, contractAgentSource } from '@slaw/core/testing'
 * void adapterContract(t, () => myAdapter(), {
 *   configFor: (scenario) => ({ command: process.execPath, args: ['-e', contractAgentSource, JSON.stringify(scenario)] }),
 *   invalidConfigs: [{}],
 * })
 * ```
 *
 * Each check is a subtest named in `adapterContractChecks`. Timing checks assert only what a loaded
 * machine cannot break: nothing times out long before `timeoutMs`; everything else waits at most `slackMs`.
 */
export async function adapterContract(t: ContractTest, makeAdapter: MakeAdapter, options: AdapterContractOptions): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 1500
  const graceMs = options.graceMs ?? 1000
  const slackMs = options.slackMs ?? 30_000
  const maxOutputBytes = options.maxOutputBytes ?? 64 * 1024
  const accepts = options.acceptsRuns ?? false
  const success = accepts ? 'accepted' : 'succeeded'
  const probe = await startProbe()
  t.teardown(() => probe.close())
  const [typeCheck, succeedCheck, failureCheck, envCheck, timeoutCheck, abortCheck, outputCheck, validateCheck, closeCheck, defaultsValidCheck, defaultsSeenCheck] = adapterContractChecks

  /** One wake of a scenario on a fresh adapter (or the one given), with a fresh run on the probe. */
  const wake = async (t: ContractTest, scenario: AdapterScenario, adapter: AgentAdapter, overrides: Partial<AdapterWakeInput> = {}) => {
    const run = probe.run()
    const abort = new AbortController()
    // Whatever happens to the check, its agent does not outlive it.
    t.teardown(() => abort.abort())
    const input: AdapterWakeInput = {
      runId: run.id,
      agentId: randomUUID(),
      squadId: randomUUID(),
      issueId: randomUUID(),
      reason: 'contract_test',
      env: wakeEnv(run.id, run.apiUrl),
      config: await options.configFor(scenario),
      timeoutMs: longTimeoutMs,
      graceMs,
      signal: abort.signal,
      ...overrides,
    }
    const startedAt = performance.now()
    const settled = settle(Promise.resolve().then(() => adapter.wake(input)))
    return { run, input, abort, startedAt, settled }
  }

  const adapters = async (t: ContractTest): Promise<AgentAdapter> => {
    const adapter = await makeAdapter()
    t.teardown(() => within(slackMs, Promise.resolve(adapter.close?.())))
    return adapter
  }

  await t.test(typeCheck, {}, async (t) => {
    const adapter = await adapters(t)
    t.ok(typeof adapter.type === 'string' && adapter.type.length > 0, `type is a non-empty string (got ${JSON.stringify(adapter.type)})`)
    t.equal(typeof adapter.wake, 'function', 'wake is a function')
  })

  await t.test(succeedCheck, {}, async (t) => {
    const adapter = await adapters(t)
    const w = await wake(t, { kind: 'succeed' }, adapter)
    const outcome = await within(slackMs, w.settled)
    const result = resultOf(outcome)
    checkRules(t, outcome)
    t.equal(result?.status, success, `the wake answers ${success} (got ${describe(outcome)})`)
    if (result?.exitCode != null) t.equal(result.exitCode, 0, 'a reported exitCode is 0')
    if (result?.httpStatus != null) t.ok(result.httpStatus >= 200 && result.httpStatus < 300, `a reported httpStatus is 2xx (${result.httpStatus})`)
    const ran = await within(slackMs, w.run.ran)
    t.ok('value' in ran, 'the agent really ran: it called SVC_API_URL')
  })

  await t.test(failureCheck, {}, async (t) => {
    const adapter = await adapters(t)
    const exitCode = 3
    for (const scenario of [{ kind: 'fail', exitCode }, { kind: 'unreachable' }] as const) {
      const w = await wake(t, scenario, adapter)
      const outcome = await within(slackMs, w.settled)
      t.ok('value' in outcome && 'value' in outcome.value, `${scenario.kind}: wake resolves, it does not throw (got ${describe(outcome)})`)
      const result = resultOf(outcome)
      checkRules(t, outcome)
      t.equal(result?.status, 'failed', `${scenario.kind}: the result is failed`)
      t.ok(typeof result?.error === 'string' && result.error.length > 0, `${scenario.kind}: with an error sentence`)
      if (scenario.kind === 'fail' && result?.exitCode != null) t.equal(result.exitCode, exitCode, "fail: exitCode is the agent's")
      if (result?.httpStatus != null) t.ok(result.httpStatus < 200 || result.httpStatus >= 300, `${scenario.kind}: httpStatus is not a success (${result.httpStatus})`)
    }
  })

  await t.test(envCheck, {}, async (t) => {
    const planted = Object.fromEntries(serverSecrets.map((name) => [name, `server-secret-${name}-${randomUUID()}`]))
    const restore = plant(planted)
    t.teardown(restore)
    const adapter = await adapters(t)
    const w = await wake(t, { kind: 'echo-env' }, adapter)
    await within(slackMs, w.settled)
    const reported = await within(slackMs, w.run.env)
    t.ok('value' in reported, 'the agent reported its environment to SVC_API_URL')
    const seen = 'value' in reported ? reported.value : {}
    const wrong = Object.entries(w.input.env)
      .filter(([k, v]) => seen[k] !== v)
      .map(([k]) => k)
    t.same(wrong, [], 'every variable of input.env arrives with its exact value')
    const leakedNames = serverSecrets.filter((name) => name in seen)
    t.same(leakedNames, [], "none of the server's variables reaches the agent")
    const values = Object.values(planted)
    const leakedValues = Object.entries(seen)
      .filter(([, v]) => values.includes(v))
      .map(([k]) => k)
    t.same(leakedValues, [], "no server secret's value reaches the agent under any name")
  })

  await t.test(timeoutCheck, {}, async (t) => {
    const adapter = await adapters(t)
    const w = await wake(t, { kind: 'hang' }, adapter, { timeoutMs })
    const outcome = await within(timeoutMs + graceMs + slackMs, w.settled)
    const elapsed = performance.now() - w.startedAt
    const result = resultOf(outcome)
    checkRules(t, outcome)
    t.equal(result?.status, 'timed_out', `the wake answers timed_out (got ${describe(outcome)})`)
    t.ok(typeof result?.error === 'string' && result.error.length > 0, 'with an error sentence')
    // Node starts a timer from the event loop's cached clock, which lags on a busy machine: a correct
    // adapter can fire a little "early" by the wall clock. Half the timeout still catches one that
    // does not wait at all (e.g. a delay past 2^31-1 ms, which setTimeout fires at once).
    t.ok(!('value' in outcome) || elapsed >= timeoutMs / 2, `not before timeoutMs (${Math.round(elapsed)} ms of ${timeoutMs})`)
    // An agent too slow to start before the timeout never connected; one that did must be gone.
    if (w.run.holding()) {
      const gone = await within(slackMs, w.run.released)
      t.ok('value' in gone, 'the agent was stopped: its connection closed')
    }
  })

  await t.test(abortCheck, {}, async (t) => {
    const adapter = await adapters(t)
    const w = await wake(t, { kind: 'hang' }, adapter)
    const holding = await within(slackMs, w.run.held)
    t.ok('value' in holding, 'the hanging agent connected to SVC_API_URL')
    w.abort.abort()
    const outcome = await within(slackMs, w.settled)
    const result = resultOf(outcome)
    checkRules(t, outcome)
    t.equal(result?.status, 'cancelled', `the wake answers cancelled (got ${describe(outcome)})`)
    t.ok(typeof result?.error === 'string' && result.error.length > 0, 'with an error sentence')
    const gone = await within(slackMs, w.run.released)
    t.ok('value' in gone, 'the agent was stopped: its connection closed')

    const before = new AbortController()
    before.abort()
    const early = await wake(t, { kind: 'succeed' }, adapter, { signal: before.signal })
    const earlyOutcome = await within(slackMs, early.settled)
    t.equal(resultOf(earlyOutcome)?.status, 'cancelled', `a wake whose signal is already aborted answers cancelled (got ${describe(earlyOutcome)})`)
  })

  await t.test(outputCheck, {}, async (t) => {
    const adapter = await adapters(t)
    const lastLine = `contract-last-line-${randomUUID()}`
    const bytes = Math.max(1024 * 1024, maxOutputBytes * 4)
    const w = await wake(t, { kind: 'print', bytes, lastLine }, adapter)
    const outcome = await within(slackMs, w.settled)
    t.ok('value' in outcome && 'value' in outcome.value, `the wake resolves (got ${describe(outcome)})`)
    const output = resultOf(outcome)?.output
    if (output === undefined) {
      t.ok(true, 'the adapter keeps no output')
      return
    }
    const size = Buffer.byteLength(output)
    t.ok(size <= maxOutputBytes, `output holds at most ${maxOutputBytes} bytes (${size} of ${bytes + lastLine.length + 1} printed)`)
    t.ok(output.includes(lastLine), 'and it is the end of the output, not the beginning')
  })

  await t.test(validateCheck, {}, async (t) => {
    const adapter = await adapters(t)
    const invalid = options.invalidConfigs ?? []
    if (!adapter.validateConfig && !adapter.configSchema) {
      t.equal(invalid.length, 0, 'an adapter without validateConfig or configSchema accepts every config, so invalidConfigs must be empty')
      return
    }
    const scenarios: AdapterScenario[] = [{ kind: 'succeed' }, { kind: 'fail', exitCode: 3 }, { kind: 'hang' }, { kind: 'echo-env' }, { kind: 'print', bytes: 1, lastLine: 'x' }]
    for (const scenario of scenarios) {
      const details = adapterConfigProblems(adapter, await options.configFor(scenario))
      t.same(details, [], `the ${scenario.kind} config is valid`)
    }
    for (const config of invalid) {
      const details = adapterConfigProblems(adapter, config)
      t.ok(Array.isArray(details) && details.length > 0, `${JSON.stringify(config)} is refused`)
      t.ok(Array.isArray(details) && details.every((d) => typeof d.path === 'string' && typeof d.message === 'string' && d.message.length > 0), 'each detail has a path and a message')
    }
  })

  await t.test(closeCheck, {}, async (t) => {
    const adapter = await makeAdapter()
    const w = await wake(t, { kind: 'hang' }, adapter)
    const holding = await within(slackMs, w.run.held)
    t.ok('value' in holding, 'the hanging agent connected to SVC_API_URL')
    const closed = await within(slackMs, settle(Promise.resolve(adapter.close?.())))
    t.ok('value' in closed && 'value' in closed.value, `close() resolves (got ${describe(closed)})`)
    // Both are awaited together: an adapter that stops nothing costs one slackMs, not two.
    const [outcome, gone] = await Promise.all([within(slackMs, w.settled), within(slackMs, w.run.released)])
    const status = resultOf(outcome)?.status
    t.ok(status !== undefined && status !== 'succeeded' && status !== 'accepted', `the running wake ends, not as a success (got ${describe(outcome)})`)
    t.ok('value' in gone, 'the agent was stopped: its connection closed')
  })

  await t.test(defaultsValidCheck, {}, async (t) => {
    const adapter = await adapters(t)
    const schema = adapter.configSchema
    if (!schema) {
      t.equal(schema, undefined, 'the adapter declares no configSchema: its configs have no defaults to check')
      return
    }
    const defaults = schemaDefaults(schema)
    for (const d of defaults) t.ok(Value.Check(d.schema, d.value), `the default of ${d.path} (${JSON.stringify(d.value)}) fits its own schema`)
    // A written config may leave every defaulted key out: the one the adapter then runs is built from the defaults.
    const config = withoutKeys(
      await options.configFor({ kind: 'succeed' }),
      defaults.map((d) => d.path),
    )
    t.same(adapterConfigProblems(adapter, config), [], 'the succeed config with its defaulted keys left out is valid as written')
    const built = applyConfigDefaults(schema, config)
    t.same(defaultedConfigProblems(schema, config), [], `with the defaults applied it still fits the schema (built: ${JSON.stringify(built)})`)
    t.same(adapterConfigProblems(adapter, built), [], 'and the adapter accepts the built config as written')
  })

  await t.test(defaultsSeenCheck, {}, async (t) => {
    const adapter = await adapters(t)
    const schema = adapter.configSchema
    if (!schema) {
      t.equal(schema, undefined, 'the adapter declares no configSchema: wake gets the config as stored')
      return
    }
    const defaults = schemaDefaults(schema)
    // The config as stored, without the keys whose value is their default: wake must fill them in from the schema.
    const stored = await options.configFor({ kind: 'succeed' })
    const omitted = defaults
      .filter((d) => {
        const v = valueAt(stored, d.path)
        return v === undefined || Value.Equal(v, d.value)
      })
      .map((d) => d.path)
    const missed = new Set<string>()
    const config = watchMissing(withoutKeys(stored, omitted), new Set(omitted), '', missed)
    const w = await wake(t, { kind: 'succeed' }, adapter, { config })
    const outcome = await within(slackMs, w.settled)
    t.ok('value' in outcome && 'value' in outcome.value, `the wake resolves (got ${describe(outcome)})`)
    t.same(
      [...missed],
      [],
      "wake reads no defaulted key off the stored config as missing: it applies the schema's defaults first " +
        `(defineAgentAdapter does; ${omitted.length} defaulted key(s) left out: ${omitted.join(', ') || 'none'})`,
    )
  })
}

/** A deep copy of a config without the keys at `paths` (JSON pointers). */
function withoutKeys(config: Record<string, unknown>, paths: string[]): Record<string, unknown> {
  const copy = structuredClone(config)
  for (const path of paths) {
    const keys = path.split('/').slice(1)
    let at: unknown = copy
    for (const k of keys.slice(0, -1)) at = at && typeof at === 'object' ? (at as Record<string, unknown>)[k] : undefined
    if (at && typeof at === 'object') delete (at as Record<string, unknown>)[keys[keys.length - 1]!]
  }
  return copy
}

function valueAt(config: Record<string, unknown>, path: string): unknown {
  let at: unknown = config
  for (const k of path.split('/').slice(1)) at = at && typeof at === 'object' ? (at as Record<string, unknown>)[k] : undefined
  return at
}

/**
 * The config behind a proxy that notes every read (or `in` test) of a key the schema gives a default
 * while the config leaves it out: an adapter that applied the defaults never asks the stored config
 * for such a key (copying it reads only the keys it has).
 */
function watchMissing(config: Record<string, unknown>, defaulted: Set<string>, base: string, missed: Set<string>): Record<string, unknown> {
  const nested = new Map<string, Record<string, unknown>>()
  for (const [k, v] of Object.entries(config)) {
    if (v && typeof v === 'object' && !Array.isArray(v)) nested.set(k, watchMissing(v as Record<string, unknown>, defaulted, `${base}/${k}`, missed))
  }
  const note = (key: string | symbol, target: Record<string, unknown>): void => {
    if (typeof key === 'string' && !(key in target) && defaulted.has(`${base}/${key}`)) missed.add(`${base}/${key}`)
  }
  return new Proxy(config, {
    get(target, key, receiver) {
      note(key, target)
      return typeof key === 'string' && nested.has(key) ? nested.get(key) : Reflect.get(target, key, receiver)
    },
    has(target, key) {
      note(key, target)
      return Reflect.has(target, key)
    },
  })
}

/** The wake variables of a run, plus a binding whose value would not survive naive quoting. */
function wakeEnv(runId: string, apiUrl: string): Record<string, string> {
  return {
    SVC_API_KEY: `contract-run-token-${randomUUID()}`,
    SVC_AGENT_ID: randomUUID(),
    SVC_SQUAD_ID: randomUUID(),
    SVC_API_URL: apiUrl,
    SVC_RUN_ID: runId,
    SVC_TASK_ID: randomUUID(),
    SVC_APPROVAL_ID: '',
    SVC_WAKE_COMMENT_ID: '',
    CONTRACT_BINDING: trickyValue,
  }
}

/** Sets variables in this process's environment; returns what puts them back. */
function plant(vars: Record<string, string>): () => void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]))
  Object.assign(process.env, vars)
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  }
}

interface ProbeRun {
  id: string
  apiUrl: string
  /** The agent called `/contract/ran`. */
  ran: Promise<void>
  /** The environment the agent reported to `/contract/env`. */
  env: Promise<Record<string, string>>
  /** The agent opened `/contract/hold`. */
  held: Promise<void>
  /** The hold connection closed: the agent is gone. */
  released: Promise<void>
  holding(): boolean
}

/** The kit's stand-in for slaw's API: each run gets its own SVC_API_URL under it. */
async function startProbe(): Promise<{ run(): ProbeRun; close(): Promise<void> }> {
  const runs = new Map<string, { ran: Gate<void>; env: Gate<Record<string, string>>; held: Gate<void>; released: Gate<void>; holding: boolean }>()
  const probe = await startStandIn((req, res) => {
    const [, runId, area, what] = (req.url ?? '').split('/')
    const run = runs.get(runId ?? '')
    if (!run || area !== 'contract') {
      res.writeHead(404).end()
      return
    }
    if (what === 'hold') {
      run.holding = true
      run.held.open()
      // Never answered: the connection closes only when the agent is gone.
      res.on('close', () => run.released.open())
      req.resume()
      return
    }
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (what === 'ran') run.ran.open()
      else if (what === 'env') {
        try {
          run.env.open(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, string>)
        } catch {
          res.writeHead(400).end()
          return
        }
      }
      res.writeHead(204).end()
    })
  })
  return {
    run() {
      const id = randomUUID()
      const r = { ran: gate<void>(), env: gate<Record<string, string>>(), held: gate<void>(), released: gate<void>(), holding: false }
      runs.set(id, r)
      return { id, apiUrl: `${probe.url}/${id}`, ran: r.ran.promise, env: r.env.promise, held: r.held.promise, released: r.released.promise, holding: () => r.holding }
    },
    close: probe.close,
  }
}

function resultOf(outcome: Within<Settled<AdapterWakeResult>>): AdapterWakeResult | undefined {
  return 'value' in outcome && 'value' in outcome.value ? outcome.value.value : undefined
}

/**
 * Rules every result keeps, whatever the check: usage that never lies about cost, a session handed
 * back only by a run that succeeded, well-formed error codes and retry times.
 */
export function resultRuleViolations(result: AdapterWakeResult): string[] {
  const wrong: string[] = []
  for (const u of Array.isArray(result.usage) ? result.usage : result.usage ? [result.usage] : []) {
    const count = (v: unknown) => v === undefined || (typeof v === 'number' && Number.isInteger(v) && v >= 0)
    if (!count(u.inputTokens) || !count(u.outputTokens) || !count(u.cachedInputTokens) || !count(u.cacheWriteTokens)) wrong.push('usage tokens are whole non-negative numbers')
    if (u.costCents !== null && !(typeof u.costCents === 'number' && Number.isInteger(u.costCents) && u.costCents >= 0)) wrong.push('usage.costCents is whole cents or null')
    if (u.costStatus === 'unpriced' && u.costCents !== null) wrong.push(`unpriced usage has costCents null (got ${String(u.costCents)})`)
    if (u.costCents === null && u.costStatus !== undefined && u.costStatus !== 'unpriced') wrong.push(`usage with costCents null is unpriced (got ${u.costStatus})`)
    // 0 cents for tokens is a claim: said outright (reported, estimated), never a default standing in for "unknown".
    const tokens = (u.inputTokens ?? 0) + (u.outputTokens ?? 0) + (u.cachedInputTokens ?? 0) + (u.cacheWriteTokens ?? 0)
    if (u.costCents === 0 && tokens > 0 && u.costStatus === undefined) wrong.push('usage with tokens and costCents 0 says its costStatus (an unknown cost is costCents null, unpriced)')
  }
  if (result.session != null) {
    if (result.status !== 'succeeded') wrong.push(`a session is handed back only by a succeeded run (got ${result.status})`)
    if (typeof result.session.id !== 'string' || result.session.id === '' || typeof result.session.key !== 'string') wrong.push('a session has a non-empty id and a key')
  }
  if (result.errorCode !== undefined && (typeof result.errorCode !== 'string' || result.errorCode === '')) wrong.push('errorCode is a non-empty string')
  if (result.errorCode !== undefined && (result.status === 'succeeded' || result.status === 'accepted')) wrong.push(`errorCode comes with a failure only (got ${result.status})`)
  if (result.retryNotBefore !== undefined && !(result.retryNotBefore instanceof Date && Number.isFinite(result.retryNotBefore.getTime()))) wrong.push('retryNotBefore is a valid Date')
  if (result.summary !== undefined && typeof result.summary !== 'string') wrong.push('summary is a string')
  return wrong
}

function checkRules(t: ContractTest, outcome: Within<Settled<AdapterWakeResult>>): void {
  const result = resultOf(outcome)
  if (result) t.same(resultRuleViolations(result), [], 'the result keeps the usage, session and error-code rules')
}

function describe(outcome: Within<Settled<unknown>>): string {
  if (!('value' in outcome)) return 'no answer within slackMs'
  if ('error' in outcome.value) return `a thrown ${outcome.value.error instanceof Error ? `${outcome.value.error.name}: ${outcome.value.error.message}` : String(outcome.value.error)}`
  const r = outcome.value.value as Partial<AdapterWakeResult> | undefined
  return r && typeof r === 'object' ? `status ${String(r.status)}${r.error ? `, error ${JSON.stringify(r.error)}` : ''}` : JSON.stringify(r)
}
