import { randomUUID } from 'node:crypto'
import t from 'tap'
import { SecretProviderError, type SecretProvider } from '@slaw/core'
import { leakedRun, secretProviderContract, type ContractTest, type SecretProviderContractOptions } from '@slaw/core/testing'

// The kit against a correct in-memory provider (every check passes) and against deliberately broken
// ones: each fails exactly the check that names its fault, and no other.

const checkNames = [
  'type and configKeys are well-formed',
  'store then resolve round-trips values',
  'each version keeps its own value',
  'resolve of an unknown ref throws not_found',
  'resolve of a deleted ref throws not_found',
  'delete removes only its version',
  'delete is idempotent',
  'health answers ok without throwing',
  'a broken backend fails clearly',
  'errors never contain the value',
  'listRemote pages with nextToken and honours pageSize and query',
  'concurrent stores give distinct refs',
] as const
type CheckName = (typeof checkNames)[number]

const brokenConfig = { down: true }
const kitOptions: SecretProviderContractOptions = { brokenConfig, largeValueLength: 5_000, emptyValues: true }

interface Entry {
  secretId: string
  version: number
  value: string
}

/** A correct provider keeping values in a Map; the broken ones below override one behaviour each. */
class MemoryProvider implements SecretProvider {
  type = 'memory_test'
  configKeys: readonly string[] = ['down']
  readonly entries = new Map<string, Entry>()

  protected guard(config: Record<string, unknown>): void {
    if (config.down) throw new SecretProviderError('unavailable', 'memory backend is down')
  }
  protected newRef(secretId: string, version: number): Promise<string> | string {
    return `mem:${secretId}:${version}:${randomUUID().slice(0, 8)}`
  }
  async store(input: { secretId: string; version: number; value: string; config: Record<string, unknown> }): Promise<{ ref: string }> {
    this.guard(input.config)
    const ref = await this.newRef(input.secretId, input.version)
    this.entries.set(ref, { secretId: input.secretId, version: input.version, value: input.value })
    return { ref }
  }
  protected latest(secretId: string): Entry | undefined {
    let best: Entry | undefined
    for (const entry of this.entries.values()) if (entry.secretId === secretId && (!best || entry.version > best.version)) best = entry
    return best
  }
  async resolve(input: { ref: string; config: Record<string, unknown> }): Promise<string> {
    this.guard(input.config)
    const latest = /^mem:(.+):latest$/.exec(input.ref)
    const entry = latest ? this.latest(latest[1]!) : this.entries.get(input.ref)
    if (!entry) throw this.notFound(input.ref)
    return entry.value
  }
  protected notFound(ref: string): SecretProviderError {
    return new SecretProviderError('not_found', `no value under ${ref}`)
  }
  async delete(input: { ref: string; config: Record<string, unknown> }): Promise<void> {
    this.guard(input.config)
    this.entries.delete(input.ref)
  }
  async health(config: Record<string, unknown>): Promise<{ ok: boolean; message?: string }> {
    return config.down ? { ok: false, message: 'memory backend is down' } : { ok: true }
  }
  async listRemote(input: { config: Record<string, unknown>; query?: string; pageSize: number; nextToken?: string }) {
    this.guard(input.config)
    const ids = [...new Set([...this.entries.values()].map((e) => e.secretId))].filter((id) => !input.query || id.includes(input.query)).sort()
    const start = Number(input.nextToken ?? 0)
    const items = ids.slice(start, start + input.pageSize).map((id) => ({ externalRef: `mem:${id}:latest`, name: `memory/${id}` }))
    const next = start + input.pageSize
    return next < ids.length ? { items, nextToken: String(next) } : { items }
  }
}

/** Remembers the values of deleted refs, and answers a resolve of one with the error `errorFor` makes of its value. */
function failsDeletedRefsWith(errorFor: (value: string) => Error): SecretProvider {
  return new (class extends MemoryProvider {
    readonly tombstones = new Map<string, string>()
    override async delete(input: { ref: string; config: Record<string, unknown> }) {
      const entry = this.entries.get(input.ref)
      if (entry) this.tombstones.set(input.ref, entry.value)
      return super.delete(input)
    }
    override async resolve(input: { ref: string; config: Record<string, unknown> }) {
      const value = this.tombstones.get(input.ref)
      if (value !== undefined) throw errorFor(value)
      return super.resolve(input)
    }
  })()
}

const broken: Array<{ fault: string; fails: CheckName; make: () => SecretProvider; options?: SecretProviderContractOptions }> = [
  {
    fault: 'a type with spaces and capitals',
    fails: 'type and configKeys are well-formed',
    make: () => Object.assign(new MemoryProvider(), { type: 'Memory Store' }),
  },
  {
    fault: 'a config key that holds a credential',
    fails: 'type and configKeys are well-formed',
    make: () => Object.assign(new MemoryProvider(), { configKeys: ['down', 'apiToken'] }),
  },
  {
    fault: 'resolve trims whitespace',
    fails: 'store then resolve round-trips values',
    make: () =>
      new (class extends MemoryProvider {
        override async resolve(input: { ref: string; config: Record<string, unknown> }) {
          return (await super.resolve(input)).trim()
        }
      })(),
  },
  {
    fault: 'a store overwrites the value of earlier versions',
    fails: 'each version keeps its own value',
    make: () =>
      new (class extends MemoryProvider {
        override async resolve(input: { ref: string; config: Record<string, unknown> }) {
          const entry = this.entries.get(input.ref)
          return entry ? (this.latest(entry.secretId)?.value ?? '') : super.resolve(input)
        }
      })(),
  },
  {
    fault: 'resolve of a never-issued ref answers an empty string',
    fails: 'resolve of an unknown ref throws not_found',
    make: () =>
      new (class extends MemoryProvider {
        readonly issued = new Set<string>()
        override async store(input: { secretId: string; version: number; value: string; config: Record<string, unknown> }) {
          const stored = await super.store(input)
          this.issued.add(stored.ref)
          return stored
        }
        override async resolve(input: { ref: string; config: Record<string, unknown> }) {
          if (input.ref.startsWith('mem:') && !input.ref.endsWith(':latest') && !this.issued.has(input.ref)) return ''
          return super.resolve(input)
        }
      })(),
  },
  {
    fault: 'resolve of a deleted ref throws a plain Error',
    fails: 'resolve of a deleted ref throws not_found',
    make: () =>
      new (class extends MemoryProvider {
        readonly deleted = new Set<string>()
        override async delete(input: { ref: string; config: Record<string, unknown> }) {
          this.deleted.add(input.ref)
          return super.delete(input)
        }
        override async resolve(input: { ref: string; config: Record<string, unknown> }) {
          if (this.deleted.has(input.ref)) throw new Error('gone')
          return super.resolve(input)
        }
      })(),
  },
  {
    fault: 'delete removes every version of the secret',
    fails: 'delete removes only its version',
    make: () =>
      new (class extends MemoryProvider {
        override async delete(input: { ref: string; config: Record<string, unknown> }) {
          const entry = this.entries.get(input.ref)
          for (const [ref, e] of this.entries) if (entry && e.secretId === entry.secretId) this.entries.delete(ref)
        }
      })(),
  },
  {
    fault: 'delete of a missing ref throws',
    fails: 'delete is idempotent',
    make: () =>
      new (class extends MemoryProvider {
        override async delete(input: { ref: string; config: Record<string, unknown> }) {
          if (!this.entries.has(input.ref)) throw this.notFound(input.ref)
          return super.delete(input)
        }
      })(),
  },
  {
    fault: 'health throws instead of answering',
    fails: 'health answers ok without throwing',
    make: () =>
      new (class extends MemoryProvider {
        override async health(config: Record<string, unknown>): Promise<{ ok: boolean; message?: string }> {
          if (!config.down) throw new Error('health check crashed')
          return super.health(config)
        }
      })(),
  },
  {
    fault: 'health throws when the backend is down',
    fails: 'a broken backend fails clearly',
    make: () =>
      new (class extends MemoryProvider {
        override async health(config: Record<string, unknown>): Promise<{ ok: boolean; message?: string }> {
          if (config.down) throw new SecretProviderError('unavailable', 'down')
          return super.health(config)
        }
      })(),
  },
  {
    fault: 'a store on a broken backend names the value',
    fails: 'a broken backend fails clearly',
    make: () =>
      new (class extends MemoryProvider {
        override async store(input: { secretId: string; version: number; value: string; config: Record<string, unknown> }) {
          if (input.config.down) throw new SecretProviderError('unavailable', `could not store ${input.value}`)
          return super.store(input)
        }
      })(),
  },
  {
    fault: 'the not_found error of a deleted ref names the value',
    fails: 'errors never contain the value',
    make: () => failsDeletedRefsWith((value) => new SecretProviderError('not_found', `deleted (it was ${value})`)),
  },
  {
    fault: 'the not_found error of a deleted ref quotes the first 40 characters of the value',
    fails: 'errors never contain the value',
    make: () => failsDeletedRefsWith((value) => new SecretProviderError('not_found', `deleted (it began ${value.slice(0, 40)}…)`)),
  },
  {
    fault: 'an error quotes 8 characters from the middle of the value',
    fails: 'errors never contain the value',
    make: () => failsDeletedRefsWith((value) => new SecretProviderError('not_found', `deleted (…${value.slice(10, 18)}…)`)),
  },
  {
    fault: 'the provider logs the value it deletes',
    fails: 'errors never contain the value',
    make: () =>
      new (class extends MemoryProvider {
        override async delete(input: { ref: string; config: Record<string, unknown> }) {
          const entry = this.entries.get(input.ref)
          if (entry) console.error(`deleting ${input.ref} (${entry.value})`)
          return super.delete(input)
        }
      })(),
  },
  {
    fault: 'store answers the value beside the ref',
    fails: 'errors never contain the value',
    make: () =>
      new (class extends MemoryProvider {
        override async store(input: { secretId: string; version: number; value: string; config: Record<string, unknown> }) {
          return { ...(await super.store(input)), stored: input.value }
        }
      })(),
  },
  {
    fault: 'the value hides deep in the cause of an error',
    fails: 'errors never contain the value',
    make: () =>
      failsDeletedRefsWith((value) => {
        const cause = Object.assign(new Error('HTTP 404'), { request: { body: { data: { value } } } })
        return new SecretProviderError('not_found', 'deleted', { cause })
      }),
  },
  {
    fault: 'listRemote ignores pageSize',
    fails: 'listRemote pages with nextToken and honours pageSize and query',
    make: () =>
      new (class extends MemoryProvider {
        override async listRemote(input: { config: Record<string, unknown>; query?: string; pageSize: number; nextToken?: string }) {
          return super.listRemote({ ...input, pageSize: 1_000 })
        }
      })(),
  },
  {
    fault: 'listRemote ignores the query',
    fails: 'listRemote pages with nextToken and honours pageSize and query',
    make: () =>
      new (class extends MemoryProvider {
        override async listRemote(input: { config: Record<string, unknown>; query?: string; pageSize: number; nextToken?: string }) {
          return super.listRemote({ ...input, query: undefined })
        }
      })(),
  },
  {
    fault: 'listRemote drops nextToken',
    fails: 'listRemote pages with nextToken and honours pageSize and query',
    make: () =>
      new (class extends MemoryProvider {
        override async listRemote(input: { config: Record<string, unknown>; query?: string; pageSize: number; nextToken?: string }) {
          return { items: (await super.listRemote(input)).items }
        }
      })(),
  },
  {
    fault: 'refs from a counter read and written across an await',
    fails: 'concurrent stores give distinct refs',
    options: { unknownRefs: ['mem:never-issued'] },
    make: () =>
      new (class extends MemoryProvider {
        count = 0
        protected override async newRef(): Promise<string> {
          const n = this.count
          await new Promise((resolve) => setImmediate(resolve))
          this.count = n + 1
          return `mem:${n}`
        }
      })(),
  },
]

/**
 * Like `local_encrypted`: the ref is the value itself, sealed to its secret and version (here merely
 * encoded), and slaw's storage keeps it; resolve needs the secretId and version, delete has nothing to do.
 */
class SealedProvider implements SecretProvider {
  type = 'sealed_test'
  configKeys: readonly string[] = ['down']
  async store(input: { secretId: string; version: number; value: string; config: Record<string, unknown> }) {
    if (input.config.down) throw new SecretProviderError('unavailable', 'sealed backend is down')
    return { ref: Buffer.from(JSON.stringify([input.secretId, input.version, input.value, randomUUID()])).toString('base64url') }
  }
  async resolve(input: { ref: string; config: Record<string, unknown>; secretId?: string; version?: number }) {
    if (input.config.down) throw new SecretProviderError('unavailable', 'sealed backend is down')
    if (input.secretId === undefined || input.version === undefined) throw new SecretProviderError('invalid_config', 'sealed refs resolve only with their secretId and version')
    let sealed: unknown
    try {
      sealed = JSON.parse(Buffer.from(input.ref, 'base64url').toString('utf8'))
    } catch {
      sealed = undefined
    }
    if (!Array.isArray(sealed) || sealed[0] !== input.secretId || sealed[1] !== input.version) throw new SecretProviderError('not_found', 'not a ref of this secret and version')
    return String(sealed[2])
  }
  async delete() {}
  async health(config: Record<string, unknown>) {
    return config.down ? { ok: false, message: 'sealed backend is down' } : { ok: true }
  }
}

/** A ContractTest that records which checks failed (and skipped) instead of reporting to tap. */
function recorder(): { t: ContractTest; failed: Map<string, string[]>; skipped: string[] } {
  const failed = new Map<string, string[]>()
  const skipped: string[] = []
  const make = (check: string | undefined): { t: ContractTest; teardowns: Array<() => unknown> } => {
    const teardowns: Array<() => unknown> = []
    const fail = (message: string) => {
      const key = check ?? '(outside a check)'
      failed.set(key, [...(failed.get(key) ?? []), message])
    }
    const t: ContractTest = {
      async test(name, options, fn) {
        const short = name.replace(/^secret provider contract: /, '')
        if (options.skip) {
          skipped.push(short)
          return
        }
        const sub = make(short)
        try {
          await fn(sub.t)
        } catch (error) {
          failed.set(short, [...(failed.get(short) ?? []), `threw ${error instanceof Error ? error.message : String(error)}`])
        } finally {
          for (const fn of sub.teardowns.reverse()) await fn()
        }
      },
      ok(value, ...message) {
        if (!value) fail(message[0] ?? 'ok')
      },
      equal(found, wanted, ...message) {
        if (found !== wanted) fail(message[0] ?? 'equal')
      },
      same(found, wanted, ...message) {
        if (JSON.stringify(found) !== JSON.stringify(wanted)) fail(message[0] ?? 'same')
      },
      teardown(fn) {
        teardowns.push(fn)
      },
    }
    return { t, teardowns }
  }
  return { t: make(undefined).t, failed, skipped }
}

// The correct provider through tap itself, as a provider author runs the kit.
void t.test('the in-memory provider passes every check', async (t) => {
  await secretProviderContract(t, () => new MemoryProvider(), kitOptions)
})

void t.test('the recorder sees every check pass and none skipped for the correct provider', async (t) => {
  const run = recorder()
  await secretProviderContract(run.t, () => new MemoryProvider(), kitOptions)
  t.same(Object.fromEntries(run.failed), {}, 'no check failed')
  t.same(run.skipped, [], 'no check was skipped')
})

for (const { fault, fails, make, options } of broken) {
  void t.test(`broken provider (${fault}) fails exactly "${fails}"`, async (t) => {
    const run = recorder()
    await secretProviderContract(run.t, make, { ...kitOptions, ...options })
    t.same([...run.failed.keys()], [fails], `failed checks: ${JSON.stringify(Object.fromEntries(run.failed))}`)
  })
}

void t.test('deletesSingleVersions: false skips the single-version check, and then a whole-secret delete passes', async (t) => {
  const whole = broken.find((b) => b.fails === 'delete removes only its version')!
  const run = recorder()
  await secretProviderContract(run.t, whole.make, { ...kitOptions, deletesSingleVersions: false })
  t.same(Object.fromEntries(run.failed), {}, 'no check failed')
  t.same(run.skipped, ['delete removes only its version'], 'only that check was skipped')
})

void t.test('a provider without listRemote skips only the listing check', async (t) => {
  const run = recorder()
  await secretProviderContract(run.t, () => Object.assign(new MemoryProvider(), { listRemote: undefined }), kitOptions)
  t.same(Object.fromEntries(run.failed), {}, 'no check failed')
  t.same(run.skipped, ['listRemote pages with nextToken and honours pageSize and query'], 'the listing check was skipped')
})

void t.test('a provider that never answers fails its checks instead of hanging the run', async (t) => {
  const run = recorder()
  const hanging = new (class extends MemoryProvider {
    override resolve(): Promise<string> {
      return new Promise(() => {})
    }
  })()
  await secretProviderContract(run.t, () => hanging, { ...kitOptions, callTimeoutMs: 50 })
  t.ok(run.failed.has('store then resolve round-trips values'), 'the round-trip check fails')
  t.match(run.failed.get('store then resolve round-trips values')?.join(' '), /no answer within 50 ms/, 'saying the call gave no answer')
})

void t.test('every check is named in this test', async (t) => {
  const run = recorder()
  await secretProviderContract(run.t, () => new MemoryProvider(), { ...kitOptions, skip: 'listing names' })
  t.same(run.skipped, [...checkNames], 'the kit runs exactly these checks, in this order')
})

void t.test('a provider whose ref carries the value passes with valueInRef, and the kit hands it secretId and version', async (t) => {
  const run = recorder()
  await secretProviderContract(run.t, () => new SealedProvider(), { ...kitOptions, valueInRef: true, unknownRefs: ['bm90LWEtc2VhbGVkLXJlZg'] })
  t.same(Object.fromEntries(run.failed), {}, 'no check failed')
  t.same(
    run.skipped,
    ['resolve of a deleted ref throws not_found', 'listRemote pages with nextToken and honours pageSize and query'],
    'only the deleted-ref check (and listing, which it lacks) were skipped',
  )
  const without = recorder()
  await secretProviderContract(without.t, () => new SealedProvider(), { ...kitOptions, unknownRefs: ['bm90LWEtc2VhbGVkLXJlZg'] })
  t.same([...without.failed.keys()], ['resolve of a deleted ref throws not_found'], 'without valueInRef, exactly the deleted-ref check fails')
})

void t.test('a check that throws names the step that threw, with the calls before it', async (t) => {
  const run = recorder()
  const fault = new (class extends MemoryProvider {
    readonly deletedSecrets = new Set<string>()
    override async delete(input: { ref: string; config: Record<string, unknown> }) {
      const entry = this.entries.get(input.ref)
      if (entry) this.deletedSecrets.add(entry.secretId)
      return super.delete(input)
    }
    override async resolve(input: { ref: string; config: Record<string, unknown> }) {
      const entry = this.entries.get(input.ref)
      if (entry && this.deletedSecrets.has(entry.secretId)) throw new SecretProviderError('unavailable', 'backend lost the secret')
      return super.resolve(input)
    }
  })()
  await secretProviderContract(run.t, () => fault, kitOptions)
  const messages = run.failed.get('delete removes only its version') ?? []
  t.equal(messages.length, 1, `one failure: ${JSON.stringify(messages)}`)
  t.match(messages[0], /step 'resolve of version 2 \(after store of version 1, store of version 2, delete of version 1\)' threw SecretProviderError unavailable: backend lost the secret/)
})

void t.test('leakedRun finds a run of 8 characters anywhere, and nothing shorter', async (t) => {
  const value = 'abcdefghijklmnopqrstuvwxyz'
  t.equal(leakedRun(new Error('…ghijklmn…'), value), 'ghijklmn', 'a run from the middle of the value')
  t.equal(leakedRun({ deep: { deeper: ['xx', 'stuvwxyz'] } }, value), 'stuvwxyz', 'deep in an object')
  t.equal(leakedRun(new Error('outer', { cause: new Error('…abcdefgh') }), value), 'abcdefgh', 'in a cause')
  t.equal(leakedRun('only abcdefg here', value), undefined, 'seven characters are not a leak')
  t.equal(leakedRun('short', 'short'), 'short', 'a value shorter than the run counts whole')
})
