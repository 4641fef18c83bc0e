import { randomBytes, randomUUID } from 'node:crypto'
import { inspect } from 'node:util'
import type { SecretProvider, SecretProviderErrorCode } from '../contracts/secret-provider.js'
import { SecretProviderError } from '../contracts/secret-provider.js'
import { settle, type Settled } from './async-helpers.js'
import type { ContractTest } from './contract-test.js'

/**
 * Makes a fresh provider for one check. The kit calls `close()` (when the provider has one) on every
 * provider it makes, when the check ends.
 */
export type MakeSecretProvider = () => Promise<SecretProvider> | SecretProvider

export interface SecretProviderContractOptions {
  /**
   * The provider configuration every call gets, as an operator would save it (non-sensitive keys
   * only, each one of `configKeys`). Default `{}`.
   */
  config?: Record<string, unknown>
  /**
   * A configuration under which the provider cannot do its work (its backend down, refusing, or
   * unreachable). When given, the kit checks that `health` answers `{ ok: false, message }`
   * without throwing, and that `store` and `resolve` fail with a `SecretProviderError` that names
   * no value. Unset, those checks are skipped.
   */
  brokenConfig?: Record<string, unknown>
  /**
   * Deleting one version's ref leaves the secret's other versions resolvable. Default true.
   * Set false for a backend that cannot remove one version alone (AWS Secrets Manager deletes a
   * secret with all its versions); slaw deletes a secret's versions together, so both are fine.
   */
  deletesSingleVersions?: boolean
  /**
   * The ref itself carries the value, encrypted, and slaw's storage keeps it (as `local_encrypted`
   * does): deleting the version's row deletes the value, so `delete` has nothing to remove and the
   * check that a deleted ref stops resolving is skipped. Default false.
   */
  valueInRef?: boolean
  /** The provider stores and returns the empty string. Default false (slaw never stores one then). */
  emptyValues?: boolean
  /** Length, in ASCII characters, of the large value the kit round-trips. Default 60,000. */
  largeValueLength?: number
  /** How many stores run at once in the concurrency check. Default 10. */
  concurrency?: number
  /**
   * Refs in the provider's own format that were never issued, which `resolve` must refuse with
   * `not_found`. Unset, the kit makes one from a ref it was given, with another secretId in place
   * of the original one (when the ref contains it).
   */
  unknownRefs?: string[]
  /** A call that takes longer than this fails its check instead of hanging the run. Default 20,000 ms. */
  callTimeoutMs?: number
  /** Skip the whole kit with this reason (e.g. a backend that is not configured here). */
  skip?: string | false
}

/**
 * Config keys that name a credential, which a provider configuration must never hold (slaw answers
 * 400 `sensitive_config_rejected` to them), matched lowercased without separators. Settings that
 * merely mention a key or a secret (`kmsKeyId`, `secretPrefix`) are fine.
 */
const sensitive = /password|passwd|passphrase|privatekey|accesskey|secretkey|clientsecret|apikey|credential|sessiontoken|token$|^(secret|key|auth|pass|pwd)$/
const isSensitive = (key: string) => sensitive.test(key.toLowerCase().replace(/[^a-z0-9]/g, ''))

/**
 * The contract every `SecretProvider` keeps. Run it from the provider's own tests:
 *
 * ```ts
 * import t from 'tap'
 * import { secretProviderContract } from '@slaw/core/testing'
 * void secretProviderContract(t, () => myProvider(), { config: { directory } })
 * ```
 *
 * Like slaw, the kit passes `secretId` and `version` along with a ref it got from `store`.
 * Each check is its own subtest, named `secret provider contract: <check>`:
 *
 * - `type and configKeys are well-formed`: a snake_case type; unique, non-sensitive config keys
 *   (a config holds no credentials); the kit's config uses only those keys.
 * - `store then resolve round-trips values`: ASCII, unicode, multi-line, JSON, a large value (and
 *   the empty string with `emptyValues`), each under its own ref.
 * - `each version keeps its own value`: a second store of a secret does not change the first ref's value.
 * - `resolve of an unknown ref throws not_found` and `resolve of a deleted ref throws not_found`
 *   (unless `valueInRef`): a `SecretProviderError` with code `not_found`.
 * - `delete removes only its version`: the secret's other versions still resolve (unless
 *   `deletesSingleVersions: false`).
 * - `delete is idempotent`: deleting twice, or a ref never issued, succeeds.
 * - `health answers ok without throwing` and, with `brokenConfig`, `a broken backend fails clearly`.
 * - `errors never contain the value`: no run of 8 or more characters of a value in any error's
 *   message, stack, cause or property, in what `store` answers (unless `valueInRef`), in what
 *   `health` answers, or in anything written to the console, stdout or stderr meanwhile.
 *
 * A call that throws where a check expected an answer fails that check naming the step: the call
 * and the calls before it (`resolve of version 2 (after store of version 1, …)`).
 * - `listRemote pages with nextToken and honours pageSize and query` (skipped without listRemote):
 *   every secret `store` wrote is listed under a name that contains its secretId; `query` (the start
 *   of those secretIds) narrows the list; no page is longer than `pageSize`; following `nextToken`
 *   lists every match once; an item's `externalRef` resolves to the secret's latest value.
 * - `concurrent stores give distinct refs`: stores of several secrets running at once each get
 *   their own ref and keep their own value.
 */
export async function secretProviderContract(t: ContractTest, makeProvider: MakeSecretProvider, options: SecretProviderContractOptions = {}): Promise<void> {
  const config = options.config ?? {}
  const callTimeoutMs = options.callTimeoutMs ?? 20_000
  const concurrency = options.concurrency ?? 10
  const largeValueLength = options.largeValueLength ?? 60_000
  const skip = options.skip ?? false
  const probe = skip ? undefined : await makeProvider()
  const listsRemote = typeof probe?.listRemote === 'function'
  await probe?.close?.()

  /**
   * Runs one named check with a fresh provider, closed when the check ends. A call that throws where
   * the check expected an answer fails the check with the step that threw ("store of version 2",
   * "resolve of version 1 after deleting version 2"), not only the provider's own error.
   */
  const check = async (name: string, fn: (t: ContractTest, p: Calls) => Promise<void>, skipWhy: string | false = false) => {
    await t.test(`secret provider contract: ${name}`, { skip: skip || skipWhy }, async (t) => {
      const provider = await makeProvider()
      t.teardown(async () => {
        await provider.close?.()
      })
      const p = calls(provider, config, callTimeoutMs)
      try {
        await fn(t, p)
      } catch (error) {
        t.ok(false, `step ${inspect(p.step())} threw ${describeError(error)}`)
      }
    })
  }

  await check('type and configKeys are well-formed', async (t, p) => {
    const { type, configKeys } = p.provider
    t.ok(typeof type === 'string' && /^[a-z][a-z0-9_]{1,62}$/.test(type), `type is snake_case (got ${inspect(type)})`)
    t.ok(Array.isArray(configKeys), 'configKeys is an array')
    const keys: unknown[] = Array.isArray(configKeys) ? configKeys : []
    t.ok(
      keys.every((k) => typeof k === 'string' && /^[A-Za-z][A-Za-z0-9_]*$/.test(k)),
      `every config key is a plain identifier (got ${inspect(keys)})`,
    )
    t.equal(new Set(keys).size, keys.length, 'config keys are unique')
    const risky = keys.filter((k) => typeof k === 'string' && isSensitive(k))
    t.same(risky, [], "no config key names a credential: credentials come from the provider's own chain, never from a config")
    const unknown = Object.keys(config).filter((k) => !keys.includes(k))
    t.same(unknown, [], "the kit's config uses only declared config keys")
  })

  await check('store then resolve round-trips values', async (t, p) => {
    const values: Array<[string, string]> = [
      ['ascii', `plain-${randomUUID()}`],
      ['unicode', `ключ 秘密 🔐 é\u0301 ${randomUUID()}`],
      ['multi-line with spaces', `  line one\n\tline two\r\nline three  ${randomUUID()}\n`],
      ['JSON text', JSON.stringify({ user: 'svc', pass: randomUUID(), nested: { list: [1, 'two'] } })],
      ['large', randomUUID() + 'x'.repeat(Math.max(0, largeValueLength - 36))],
    ]
    if (options.emptyValues) values.push(['empty', ''])
    for (const [label, value] of values) {
      const stored = await p.store(secretId(), 1, value)
      t.ok(typeof stored.ref === 'string' && stored.ref.length > 0, `store of a ${label} value returns a non-empty ref`)
      const back = await p.resolve(stored)
      t.ok(back === value, `a ${label} value comes back exactly (${back.length} of ${value.length} chars)`)
    }
  })

  await check('each version keeps its own value', async (t, p) => {
    const id = secretId()
    const first = await p.store(id, 1, `v1-${randomUUID()}`)
    const second = await p.store(id, 2, `v2-${randomUUID()}`)
    t.ok(first.ref !== second.ref, 'two versions get two refs')
    t.equal(await p.resolve(first), first.value, 'version 1 still resolves to its own value')
    t.equal(await p.resolve(second), second.value, 'version 2 resolves to its value')
  })

  await check('resolve of an unknown ref throws not_found', async (t, p) => {
    const stored = await p.store(secretId(), 1, `known-${randomUUID()}`)
    const unknown = unknownRefs(stored, options.unknownRefs)
    t.ok(unknown.length > 0, 'there is an unknown ref to try (set unknownRefs when refs do not contain the secretId)')
    for (const target of unknown) {
      const failure = await p.fails(() => p.resolve(target))
      expectCode(t, failure, ['not_found'], `resolve of the never-issued ref ${target.ref}`)
    }
  })

  await check(
    'resolve of a deleted ref throws not_found',
    async (t, p) => {
      const stored = await p.store(secretId(), 1, `doomed-${randomUUID()}`)
      await p.delete(stored.ref)
      const failure = await p.fails(() => p.resolve(stored))
      expectCode(t, failure, ['not_found'], 'resolve after delete')
    },
    options.valueInRef ? 'the ref carries the value; slaw deletes it with the version row (valueInRef: true)' : false,
  )

  await check(
    'delete removes only its version',
    async (t, p) => {
      const id = secretId()
      const first = await p.store(id, 1, `first-${randomUUID()}`)
      const second = await p.store(id, 2, `second-${randomUUID()}`)
      await p.delete(first.ref)
      t.equal(await p.resolve(second), second.value, 'the other version still resolves to its value')
    },
    options.deletesSingleVersions === false ? 'the provider deletes a secret with all its versions (deletesSingleVersions: false)' : false,
  )

  await check('delete is idempotent', async (t, p) => {
    const stored = await p.store(secretId(), 1, `twice-${randomUUID()}`)
    await p.delete(stored.ref)
    const again = await settle(p.delete(stored.ref))
    t.ok('value' in again, `deleting a deleted ref succeeds (${describe(again)})`)
    for (const { ref } of unknownRefs(stored, options.unknownRefs)) {
      const never = await settle(p.delete(ref))
      t.ok('value' in never, `deleting a never-issued ref succeeds (${describe(never)})`)
    }
  })

  await check('health answers ok without throwing', async (t, p) => {
    const answer = await settle(p.health(config))
    t.ok('value' in answer, `health resolves (${describe(answer)})`)
    const health = 'value' in answer ? answer.value : undefined
    t.equal(health?.ok, true, `health is ok against a working backend (message: ${inspect(health?.message)})`)
    t.ok(health?.message === undefined || typeof health.message === 'string', 'message, when present, is a string')
  })

  await check(
    'a broken backend fails clearly',
    async (t, p) => {
      const broken = options.brokenConfig ?? {}
      const answer = await settle(p.health(broken))
      t.ok('value' in answer, `health resolves even when the backend is broken (${describe(answer)})`)
      const health = 'value' in answer ? answer.value : undefined
      t.equal(health?.ok, false, 'health is not ok')
      t.ok(typeof health?.message === 'string' && health.message.length > 0, `and says why (${inspect(health?.message)})`)
      const value = secretValue()
      const storeFailure = await p.fails(() => p.store(secretId(), 1, value, broken))
      expectCode(t, storeFailure, ['unavailable', 'timeout', 'access_denied', 'invalid_config'], 'store on a broken backend')
      t.ok(!leaks(storeFailure, value), `and the error names no part of the value (found ${inspect(leakedRun(storeFailure, value))})`)
      const resolveFailure = await p.fails(() => p.resolve(`${secretId()}`, broken))
      expectCode(t, resolveFailure, ['unavailable', 'timeout', 'access_denied', 'invalid_config', 'not_found'], 'resolve on a broken backend')
    },
    options.brokenConfig ? false : 'no brokenConfig given',
  )

  await check('errors never contain the value', async (t, p) => {
    // What the provider writes to the console or to stdout/stderr while it works counts too.
    const output = captureOutput()
    try {
      const value = secretValue()
      const stored = await p.store(secretId(), 1, value)
      if (!options.valueInRef) t.ok(!leaks(stored.answer, value), `store's answer holds no part of the value (found ${inspect(leakedRun(stored.answer, value))})`)
      for (const target of unknownRefs(stored, options.unknownRefs)) {
        const failure = await p.fails(() => p.resolve(target))
        t.ok(!leaks(failure, value), `resolve of a never-issued ref: no part of the value in the error's message, stack, cause or properties (found ${inspect(leakedRun(failure, value))})`)
      }
      await p.delete(stored.ref)
      const failure = await p.fails(() => p.resolve(stored))
      t.ok(!leaks(failure, value), `resolve of a deleted ref: no part of the value in the error's message, stack, cause or properties (found ${inspect(leakedRun(failure, value))})`)
      const health = await settle(p.health(config))
      t.ok(!leaks(health, value), 'health says nothing of a value')
      t.ok(!leaks(output.text(), value), `nothing written to the console, stdout or stderr holds part of the value (found ${inspect(leakedRun(output.text(), value))})`)
    } finally {
      output.stop()
    }
  })

  await check(
    'listRemote pages with nextToken and honours pageSize and query',
    async (t, p) => {
      // UUID-shaped ids sharing their first group, which is the query.
      const tag = randomUUID().slice(0, 8)
      const ids = Array.from({ length: 5 }, () => tag + randomUUID().slice(8))
      const latest = new Map<string, string>()
      for (const id of ids) {
        await p.store(id, 1, `old-${randomUUID()}`)
        latest.set(id, (await p.store(id, 2, `new-${randomUUID()}`)).value)
      }
      const other = secretId()
      await p.store(other, 1, `other-${randomUUID()}`)

      const pageSize = 2
      const seen: Array<{ externalRef: string; name: string }> = []
      let nextToken: string | undefined
      let pages = 0
      do {
        const page = await p.listRemote({ query: tag, pageSize, nextToken })
        pages += 1
        t.ok(Array.isArray(page.items) && page.items.length <= pageSize, `page ${pages} holds at most ${pageSize} items (got ${page.items?.length})`)
        seen.push(...(page.items ?? []))
        t.ok(page.nextToken === undefined || (typeof page.nextToken === 'string' && page.nextToken !== nextToken), 'nextToken is absent or moves on')
        nextToken = page.nextToken
      } while (nextToken !== undefined && pages < 20)
      t.ok(pages >= 3, `five matches at two a page take at least three pages (took ${pages})`)
      const found = ids.filter((id) => seen.some((item) => item.name.includes(id)))
      t.same(found, ids, 'every stored secret matching the query is listed, its name containing its secretId')
      t.equal(new Set(seen.map((i) => i.externalRef)).size, seen.length, 'no item is listed twice')
      t.ok(!seen.some((item) => item.name.includes(other)), 'a secret that does not match the query is left out')
      t.ok(
        seen.every((item) => typeof item.externalRef === 'string' && item.externalRef.length > 0),
        'every item has an externalRef',
      )
      const one = seen.find((item) => item.name.includes(ids[0]!))
      if (one) t.equal(await p.resolve(one.externalRef), latest.get(ids[0]!), "an item's externalRef resolves to the secret's latest value")
    },
    listsRemote ? false : 'the provider has no listRemote',
  )

  await check('concurrent stores give distinct refs', async (t, p) => {
    const jobs = Array.from({ length: concurrency }, (_, i) => p.store(secretId(), 1, `concurrent-${i}-${randomUUID()}`))
    const stored = await Promise.all(jobs)
    t.equal(new Set(stored.map((s) => s.ref)).size, stored.length, `${stored.length} stores at once gave ${stored.length} distinct refs`)
    const back = await Promise.all(stored.map((s) => p.resolve(s)))
    t.same(
      back,
      stored.map((s) => s.value),
      'and each ref resolves to its own value',
    )
  })
}

/** A stored value with the ref it got. */
interface Stored {
  secretId: string
  version: number
  value: string
  ref: string
  /** All that `store` answered, to look for the value in it. */
  answer?: unknown
}

/** The provider's calls with the kit's config filled in, each bounded by `callTimeoutMs`. */
interface Calls {
  provider: SecretProvider
  store(secretId: string, version: number, value: string, config?: Record<string, unknown>): Promise<Stored>
  /** Resolves a bare ref, or a stored one with its secretId and version, as slaw passes them. */
  resolve(target: string | Pick<Stored, 'ref' | 'secretId' | 'version'>, config?: Record<string, unknown>): Promise<string>
  delete(ref: string, config?: Record<string, unknown>): Promise<void>
  health(config: Record<string, unknown>): Promise<{ ok: boolean; message?: string }>
  listRemote(input: { query?: string; pageSize: number; nextToken?: string }): Promise<{ items: Array<{ externalRef: string; name: string }>; nextToken?: string }>
  /** What `fn` rejected with; a `KitFailure` when it resolved instead. */
  fails(fn: () => Promise<unknown>): Promise<unknown>
  /** The call in progress or last made, with the calls before it: what a failure names. */
  step(): string
}

/** Stands for "the call succeeded" where the kit wanted it to fail. */
class KitFailure extends Error {
  constructor(what: string) {
    super(what)
    this.name = 'KitFailure'
  }
}

function calls(provider: SecretProvider, config: Record<string, unknown>, callTimeoutMs: number): Calls {
  const steps: string[] = []
  const versionOf = new Map<string, string>()
  const label = (target: string | Pick<Stored, 'ref' | 'secretId' | 'version'>) => {
    const ref = typeof target === 'string' ? target : target.ref
    return versionOf.get(ref) ?? (typeof target === 'string' ? `the ref ${inspect(ref)}` : `version ${target.version} of a never-issued ref`)
  }
  const bounded = async <T>(what: string, promise: Promise<T>): Promise<T> => {
    steps.push(what)
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new KitFailure(`${what} gave no answer within ${callTimeoutMs} ms`)), callTimeoutMs)
    })
    promise.catch(() => {})
    try {
      return await Promise.race([promise, timeout])
    } finally {
      clearTimeout(timer)
    }
  }
  return {
    provider,
    async store(secretId, version, value, cfg = config) {
      const answer = await bounded(`store of version ${version}`, provider.store({ secretId, version, value, config: cfg }))
      if (typeof answer?.ref === 'string') versionOf.set(answer.ref, `version ${version}`)
      return { secretId, version, value, ref: answer?.ref, answer }
    },
    resolve: (target, cfg = config) => {
      // Built aside: a contract that predates secretId and version takes them as extra properties.
      const input = typeof target === 'string' ? { ref: target, config: cfg } : { ref: target.ref, config: cfg, secretId: target.secretId, version: target.version }
      return bounded(`resolve of ${label(target)}`, provider.resolve(input))
    },
    delete: (ref, cfg = config) => bounded(`delete of ${label(ref)}`, provider.delete({ ref, config: cfg })),
    health: (cfg) => bounded('health', provider.health(cfg)),
    listRemote: (input) => {
      if (!provider.listRemote) throw new KitFailure('the provider has no listRemote')
      return bounded(`listRemote ${inspect(input)}`, provider.listRemote({ config, ...input }))
    },
    async fails(fn) {
      try {
        const value = await fn()
        return new KitFailure(`the call succeeded (answered ${typeof value === 'string' ? `a string of ${value.length} chars` : inspect(value)})`)
      } catch (error) {
        return error
      }
    },
    step() {
      if (steps.length === 0) return 'before the first call'
      const last = steps[steps.length - 1]!
      const before = steps.slice(-6, -1)
      return before.length ? `${last} (after ${before.join(', ')})` : last
    },
  }
}

/** Records what is written to the console, stdout and stderr until `stop()`, passing it on as well. */
function captureOutput(): { text(): string; stop(): void } {
  const chunks: string[] = []
  const record = (chunk: unknown) => chunks.push(typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : inspect(chunk))
  const streams = [process.stdout, process.stderr] as const
  const writes = streams.map((stream) => stream.write)
  streams.forEach((stream, i) => {
    stream.write = function (this: unknown, chunk: unknown, ...rest: unknown[]) {
      record(chunk)
      return (writes[i] as (...args: unknown[]) => boolean).call(stream, chunk, ...rest)
    } as typeof stream.write
  })
  const methods = ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const
  const originals = methods.map((m) => console[m])
  methods.forEach((m, i) => {
    console[m] = (...args: unknown[]) => {
      record(args.map((a) => (typeof a === 'string' ? a : inspect(a, { depth: 8 }))).join(' '))
      ;(originals[i] as (...a: unknown[]) => void)(...args)
    }
  })
  return {
    text: () => chunks.join(''),
    stop() {
      for (const [i, stream] of streams.entries()) stream.write = writes[i]!
      for (const [i, m] of methods.entries()) console[m] = originals[i]!
    },
  }
}

/**
 * Refs in the provider's format that were never issued, with the secretId and version they claim:
 * the given ones, or the stored ref with another secretId in place of its own (when it holds it).
 */
function unknownRefs(stored: Stored, given: string[] | undefined): Array<Pick<Stored, 'ref' | 'secretId' | 'version'>> {
  if (given) return given.map((ref) => ({ ref, secretId: stored.secretId, version: stored.version }))
  if (!stored.ref.includes(stored.secretId)) return []
  const other = secretId()
  return [{ ref: stored.ref.replaceAll(stored.secretId, other), secretId: other, version: stored.version }]
}

function expectCode(t: ContractTest, failure: unknown, codes: SecretProviderErrorCode[], what: string): void {
  const ok = failure instanceof SecretProviderError && codes.includes(failure.code)
  t.ok(ok, `${what} throws SecretProviderError with code ${codes.join(' or ')} (got ${describeError(failure)})`)
}

/** The shortest run of a value's characters that counts as a leak: a provider quoting part of a value leaks it. */
export const leakRunLength = 8

/**
 * The first run of `leakRunLength` or more characters of `value` that shows anywhere in `thing`
 * (message, stack, cause chain, any property, however deep), or undefined. A value shorter than the
 * run counts only whole.
 */
export function leakedRun(thing: unknown, value: string): string | undefined {
  if (value.length === 0) return undefined
  const seen: string[] = []
  let current: unknown = thing
  for (let depth = 0; depth < 10 && current !== undefined && current !== null; depth += 1) {
    if (current instanceof Error) seen.push(current.message, current.stack ?? '')
    current = current instanceof Error ? current.cause : undefined
  }
  seen.push(typeof thing === 'string' ? thing : inspect(thing, { depth: 12, maxStringLength: Infinity, maxArrayLength: Infinity, showHidden: false, getters: false }))
  try {
    seen.push(JSON.stringify(thing) ?? '')
  } catch {
    // circular: inspect above saw it all
  }
  const text = seen.join('\n')
  const run = Math.min(leakRunLength, value.length)
  for (let i = 0; i + run <= value.length; i += 1) {
    const piece = value.slice(i, i + run)
    if (text.includes(piece)) return piece
  }
  return undefined
}

/** Whether any run of 8 or more characters of `value` shows anywhere in `thing` (see `leakedRun`). */
export function leaks(thing: unknown, value: string): boolean {
  return leakedRun(thing, value) !== undefined
}

/** A value made only of random characters, so that any run of it found elsewhere is a leak, never a coincidence of words. */
export function secretValue(): string {
  return randomBytes(24).toString('base64url')
}

function describeError(error: unknown): string {
  if (error instanceof SecretProviderError) return `SecretProviderError ${error.code}: ${error.message}`
  if (error instanceof Error) return `${error.name}: ${error.message}`
  return inspect(error)
}

function describe(outcome: Settled<unknown>): string {
  return 'value' in outcome ? 'answered' : `threw ${describeError(outcome.error)}`
}

const runId = randomUUID().slice(0, 8)
/** A fresh secret id, as slaw would pass (a UUID), tagged by run so a shared backend stays readable. */
export function secretId(): string {
  return randomUUID().replace(/^.{8}/, runId)
}
