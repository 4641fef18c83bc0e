/**
 * Checks the plugins handed to `createInstance()` before anything starts, so a wrong import or a
 * misspelt member fails at start with a sentence naming the plugin and the member, instead of as
 * `x is not a function` on the first request that needs it. Shapes only: behaviour is proven by the
 * contract kits in `@slaw/core/testing`.
 */

type Member = readonly [name: string, kind: 'function' | 'string' | 'array' | 'schema']

const storageMembers: readonly Member[] = [
  ['name', 'string'],
  ['migrate', 'function'],
  ['transaction', 'function'],
  ['ping', 'function'],
  ['close', 'function'],
]
const lockMembers: readonly Member[] = [
  ['name', 'string'],
  ['withLock', 'function'],
  ['close', 'function'],
]
const adapterMembers: readonly Member[] = [
  ['type', 'string'],
  ['wake', 'function'],
]
const adapterOptional: readonly Member[] = [
  ['configSchema', 'schema'],
  ['validateConfig', 'function'],
  ['close', 'function'],
]
const secretProviderMembers: readonly Member[] = [
  ['type', 'string'],
  ['configKeys', 'array'],
  ['store', 'function'],
  ['resolve', 'function'],
  ['delete', 'function'],
  ['health', 'function'],
]
const secretProviderOptional: readonly Member[] = [
  ['listRemote', 'function'],
  ['validateConfig', 'function'],
  ['close', 'function'],
]
const towerMembers: readonly Member[] = [
  ['name', 'string'],
  ['start', 'function'],
  ['close', 'function'],
]
const towerOptional: readonly Member[] = [
  ['gate', 'function'],
  ['syncNow', 'function'],
  ['status', 'function'],
  ['connect', 'function'],
  ['disconnect', 'function'],
  ['reEnroll', 'function'],
  ['managesSkills', 'function'],
  ['limitReached', 'function'],
  ['refreshSkills', 'function'],
]

const hints: Record<string, string> = {
  storage: 'pgStorage() from @slaw/storage-pg, or pgliteStorage() from @slaw/storage-pg/pglite',
  locks: 'redisLocks() from @slaw/lock-redis, or leave it out for in-process locks',
  adapter: 'e.g. processAdapter() from @slaw/adapters',
  'secret provider': 'a SecretProvider from @slaw/core',
  tower: 'towerClient() from @slaw/tower-client',
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`
}

function is(value: unknown, kind: Member[1]): boolean {
  if (kind === 'array') return Array.isArray(value)
  if (kind === 'schema') return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'object' && typeof (value as { properties?: unknown }).properties === 'object'
  if (kind === 'string') return typeof value === 'string' && value.length > 0
  return typeof value === 'function'
}

const article = (kind: Member[1]): string => (kind === 'array' ? 'an array' : kind === 'string' ? 'a non-empty string' : kind === 'schema' ? 'a TypeBox object schema (Type.Object)' : 'a function')

/** Throws a TypeError naming `label` and the first member that is missing or of the wrong kind. */
function check(label: string, hint: string, value: unknown, required: readonly Member[], optional: readonly Member[] = []): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`createInstance: ${label} must be an object, got ${describe(value)} (${hint})`)
  }
  const v = value as Record<string, unknown>
  for (const [name, kind] of required) {
    if (v[name] === undefined) throw new TypeError(`createInstance: ${label} has no ${name} (${article(kind)}); ${hint}`)
    if (!is(v[name], kind)) throw new TypeError(`createInstance: ${label}.${name} must be ${article(kind)}, got ${describe(v[name])}`)
  }
  for (const [name, kind] of optional) {
    if (v[name] !== undefined && !is(v[name], kind)) throw new TypeError(`createInstance: ${label}.${name} must be ${article(kind)} when given, got ${describe(v[name])}`)
  }
}

function checkList(option: string, hintKey: string, value: unknown, required: readonly Member[], optional: readonly Member[], key: string): void {
  if (value === undefined) return
  if (!Array.isArray(value)) throw new TypeError(`createInstance: ${option} must be an array, got ${describe(value)} (${hints[hintKey]})`)
  value.forEach((item, i) => {
    const named = item && typeof item === 'object' && typeof (item as Record<string, unknown>)[key] === 'string' ? ` "${(item as Record<string, string>)[key]}"` : ''
    check(`${option}[${i}]${named}`, hints[hintKey]!, item, required, optional)
  })
}

/**
 * Validates the plugin options of `createInstance()`: storage, locks, adapters (type, wake),
 * secretProviders (type, configKeys, store, resolve, delete, health) and tower (name, start, close).
 */
export function validatePluginShapes(options: unknown): void {
  if (typeof options !== 'object' || options === null) throw new TypeError(`createInstance: options must be an object, got ${describe(options)}`)
  const o = options as Record<string, unknown>
  if (o.storage === undefined || o.storage === null) throw new TypeError(`createInstance: options.storage is required (${hints.storage})`)
  check('storage', hints.storage!, o.storage, storageMembers)
  if (o.locks !== undefined) check('locks', hints.locks!, o.locks, lockMembers)
  checkList('adapters', 'adapter', o.adapters, adapterMembers, adapterOptional, 'type')
  checkList('secretProviders', 'secret provider', o.secretProviders, secretProviderMembers, secretProviderOptional, 'type')
  if (o.tower !== undefined) check('tower', hints.tower!, o.tower, towerMembers, towerOptional)
}
