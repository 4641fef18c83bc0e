import { Kind, Type, type Static, type TObject, type TProperties, type TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { Value } from '@sinclair/typebox/value'
import type { ErrorDetail } from '../errors.js'
import type { AdapterEnvironmentReport, AdapterWakeInput, AdapterWakeResult, AgentAdapter } from './agent-adapter.js'

/**
 * The keys of every adapterConfig that the run engine itself reads (docs/heartbeats.md: adapterConfig).
 * `defineAgentAdapter` merges them into an adapter's schema when the schema does not declare them, so
 * an adapter whose schema says `additionalProperties: false` still accepts them. The engine's own check
 * (binding shapes, env names, who may bind a secret) stays the engine's: these schemas only mirror it,
 * with the engine's messages, and the engine's details win at these paths.
 */
export const engineConfigProperties = {
  env: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { errorMessage: 'env must be an object of NAME: binding' })),
  timeoutSec: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400, errorMessage: 'timeoutSec must be an integer from 1 to 86400' })),
  graceSec: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400, errorMessage: 'graceSec must be an integer from 1 to 86400' })),
}

/** The engine's keys as an adapter's wake sees them (already checked when the config was written). */
// A type, not an interface: a typed config stays assignable to `Record<string, unknown>` (to hand it on).
export type EngineConfig = {
  env?: Record<string, unknown>
  timeoutSec?: number
  graceSec?: number
}

/** The config a schema-declaring adapter's `wake` gets: the schema's type (defaults applied) plus the engine's keys. */
export type AdapterConfig<S extends TObject> = Static<S> & EngineConfig

/** What an author hands `defineAgentAdapter`: an `AgentAdapter` whose config is typed by `configSchema`. */
export interface AgentAdapterDefinition<S extends TObject> {
  readonly type: string
  /**
   * The config's TypeBox schema. A property with a `default` may be left out of a written config
   * (defaults are applied before it is checked and before `wake`): declare it without `Type.Optional`
   * and `wake` sees it typed as present.
   */
  readonly configSchema: S
  /**
   * Rules a schema cannot say (a URL that parses, a header the adapter owns). Runs on every written
   * config as written, whether or not the schema accepted it: read it as untrusted. Its details
   * are reported with the schema's (same `{path, message}` shape, paths inside the config).
   */
  validateConfig?(config: Record<string, unknown>): ErrorDetail[]
  wake(input: AdapterWakeInput<AdapterConfig<S>>): Promise<AdapterWakeResult>
  checkEnvironment?(config: AdapterConfig<S>): Promise<AdapterEnvironmentReport>
  close?(): Promise<void>
}

interface Checkers {
  /** The schema as a written config meets it: a property with a default may be left out. */
  written: TypeCheck<TSchema>
  /** The schema itself, for a config with its defaults applied. */
  full: TypeCheck<TObject>
}
const compiled = new WeakMap<TObject, Checkers>()

/** The schema's compiled checkers, compiled once per schema object. */
function checkers(schema: TObject): Checkers {
  let c = compiled.get(schema)
  if (!c) {
    c = { written: TypeCompiler.Compile(withDefaultsOptional(schema)), full: TypeCompiler.Compile(schema) }
    compiled.set(schema, c)
  }
  return c
}

/** A copy of a schema in which no property that has a `default` is required. */
function withDefaultsOptional<T extends TSchema>(schema: T): T {
  const copy = { ...schema } as Record<string | symbol, unknown>
  if (schema.properties && typeof schema.properties === 'object') {
    const properties = schema.properties as TProperties
    copy.properties = Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, withDefaultsOptional(v)]))
    if (Array.isArray(schema.required)) copy.required = (schema.required as string[]).filter((k) => !(properties[k] && 'default' in properties[k]))
  }
  if (schema.items && typeof schema.items === 'object' && !Array.isArray(schema.items)) copy.items = withDefaultsOptional(schema.items as TSchema)
  if (schema.patternProperties && typeof schema.patternProperties === 'object') {
    copy.patternProperties = Object.fromEntries(Object.entries(schema.patternProperties as TProperties).map(([k, v]) => [k, withDefaultsOptional(v)]))
  }
  for (const key of ['anyOf', 'allOf', 'oneOf'] as const) if (Array.isArray(schema[key])) copy[key] = (schema[key] as TSchema[]).map((s) => withDefaultsOptional(s))
  return copy as T
}

/**
 * A copy of a stored config with the schema's defaults filled in (`Value.Clone` + `Value.Default`).
 * Neither `Value.Convert` nor `Value.Clean`: a written config was checked against the schema as
 * written, so coercing `"600"` to 600 at wake time would run a config the check refused; keys the
 * schema does not name are left alone (a schema without `additionalProperties: false` allows them).
 */
export function applyConfigDefaults(schema: TObject, config: Record<string, unknown>): Record<string, unknown> {
  return Value.Default(schema, Value.Clone(config)) as Record<string, unknown>
}

/**
 * What a schema refuses in a config as written (a property with a default may be left out), one
 * detail per problem. A property's (an array's, a record value's) `errorMessage` replaces TypeBox's
 * wording for every problem at or under it, reported at its path: `{command: ' '}` →
 * `/command: a process agent needs a command`; the deepest one along the path wins.
 */
export function configSchemaProblems(schema: TObject, config: Record<string, unknown>): ErrorDetail[] {
  return schemaProblems(schema, checkers(schema).written, config)
}

/**
 * What the schema refuses in a config with its defaults applied: nothing, unless a default breaks its
 * own schema (an adapter bug the contract kit catches).
 */
export function defaultedConfigProblems(schema: TObject, config: Record<string, unknown>): ErrorDetail[] {
  return schemaProblems(schema, checkers(schema).full, applyConfigDefaults(schema, config))
}

function schemaProblems(schema: TObject, check: TypeCheck<TSchema>, value: unknown): ErrorDetail[] {
  if (check.Check(value)) return []
  const details: ErrorDetail[] = []
  for (const error of check.Errors(value)) details.push(explained(schema, error.path, error.message))
  return unique(details)
}

/** The deepest schema along `path` (below the root) that has an `errorMessage`, at its path; else TypeBox's own message. */
function explained(root: TSchema, path: string, message: string): ErrorDetail {
  const raw = path.split('/').slice(1)
  const segments = raw.map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
  let schema: TSchema | undefined = root
  let found: ErrorDetail | undefined
  for (let i = 0; i < segments.length && schema; i++) {
    schema = childSchema(schema, segments[i]!)
    if (schema && typeof schema.errorMessage === 'string') found = { path: `/${raw.slice(0, i + 1).join('/')}`, message: schema.errorMessage }
  }
  return found ?? { path, message }
}

function childSchema(schema: TSchema, key: string): TSchema | undefined {
  if (schema.properties && typeof schema.properties === 'object' && key in schema.properties) return (schema.properties as TProperties)[key]
  if (schema[Kind] === 'Array' && schema.items) return schema.items as TSchema
  if (schema.patternProperties && typeof schema.patternProperties === 'object') return Object.values(schema.patternProperties as TProperties)[0]
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') return schema.additionalProperties as TSchema
  return undefined
}

function unique(details: ErrorDetail[]): ErrorDetail[] {
  const seen = new Set<string>()
  return details.filter((d) => {
    const key = `${d.path}\u0000${d.message}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/**
 * Every problem of an adapter config as the adapter sees it: its `configSchema`'s (when it declares
 * one) and its own `validateConfig`'s, each problem once. Paths point inside the config.
 */
export function adapterConfigProblems(adapter: Pick<AgentAdapter, 'configSchema' | 'validateConfig'>, config: Record<string, unknown>): ErrorDetail[] {
  const own = adapter.validateConfig?.(config) ?? []
  const schema = adapter.configSchema ? configSchemaProblems(adapter.configSchema, config) : []
  return unique([...own, ...schema])
}

/**
 * Defines an adapter whose config is declared by a TypeBox schema, and returns a plain `AgentAdapter`:
 *
 * - `configSchema` is the author's schema with the engine's keys (`env`, `timeoutSec`, `graceSec`)
 *   merged in where it does not declare them; it is compiled once, here. The schema may declare them
 *   to narrow them, never with a `default` (the engine applies its own: 600 s, 15 s); that throws.
 * - `validateConfig` reports the author's own rules, then what the schema refuses (a key with a
 *   default may be left out).
 * - `wake` and `checkEnvironment` get a copy of the stored config with the schema's defaults applied,
 *   typed `Static<schema>`. A stored config the schema refuses (written before the adapter declared
 *   it, or an agent created without adapterConfig) is not run: the wake answers `failed` naming each
 *   problem, the environment check fails its `config` check.
 *
 * @example
 * ```ts
 * const schema = Type.Object({ command: Type.String({ minLength: 1 }), retries: Type.Integer({ minimum: 0, default: 2 }) })
 * export const sshAdapter = () => defineAgentAdapter({
 *   type: 'ssh',
 *   configSchema: schema,
 *   async wake(input) {
 *     const { command, retries } = input.config // string, number (2 when not set)
 *     …
 *   },
 * })
 * ```
 */
export function defineAgentAdapter<S extends TObject>(definition: AgentAdapterDefinition<S>): AgentAdapter & { readonly configSchema: TObject } {
  const own = definition.configSchema
  for (const key of Object.keys(engineConfigProperties)) {
    const declared = own.properties[key]
    // The engine reads these from the stored config with its own defaults (600 s, 15 s): a schema default would go unseen by it.
    if (declared && 'default' in declared)
      throw new TypeError(`defineAgentAdapter(${definition.type}): ${key} is read by the run engine, which has its own default; the schema may narrow it but not give it a default`)
  }
  const properties: TProperties = { ...own.properties }
  for (const [key, schema] of Object.entries(engineConfigProperties)) if (!(key in properties)) properties[key] = schema
  const options = Object.fromEntries(Object.entries(own).filter(([k]) => k !== 'type' && k !== 'properties' && k !== 'required'))
  const configSchema = Type.Object(properties, options)
  checkers(configSchema)
  const author = definition.validateConfig?.bind(definition)
  const validateConfig = (config: Record<string, unknown>): ErrorDetail[] => {
    const own = author ? author(config) : []
    return unique([...own, ...configSchemaProblems(configSchema, config)])
  }
  const typed = (stored: Record<string, unknown>): { config: AdapterConfig<S> } | { problems: ErrorDetail[] } => {
    // One copy, checked and then defaulted: the stored config is read only for the keys it has.
    const config = Value.Clone(stored)
    const problems = configSchemaProblems(configSchema, config)
    if (problems.length) return { problems }
    const defaulted = Value.Default(configSchema, config) as Record<string, unknown>
    // A default that breaks its own schema is the adapter's bug; the typed wake must not see it.
    if (!checkers(configSchema).full.Check(defaulted)) return { problems: schemaProblems(configSchema, checkers(configSchema).full, defaulted) }
    return { config: defaulted as AdapterConfig<S> }
  }
  const said = (problems: ErrorDetail[]): string => problems.map((d) => `adapterConfig${d.path}: ${d.message}`).join('; ')
  const adapter: AgentAdapter & { readonly configSchema: TObject } = {
    type: definition.type,
    configSchema,
    validateConfig,
    async wake(input: AdapterWakeInput): Promise<AdapterWakeResult> {
      const t = typed(input.config)
      if ('problems' in t) return { status: 'failed', error: `the agent's adapterConfig does not fit the ${definition.type} adapter: ${said(t.problems)}` }
      return definition.wake({ ...input, config: t.config })
    },
  }
  if (definition.checkEnvironment) {
    const check = definition.checkEnvironment.bind(definition)
    adapter.checkEnvironment = async (config) => {
      const t = typed(config)
      if ('problems' in t) return { ok: false, checks: [{ name: 'config', status: 'fail', message: said(t.problems) }] }
      return check(t.config)
    }
  }
  if (definition.close) adapter.close = definition.close.bind(definition)
  return adapter
}

/** Top-level and nested `default`s a schema declares, as JSON pointers inside the config (for the kit). */
export function schemaDefaults(schema: TObject, base = ''): Array<{ path: string; value: unknown; schema: TSchema }> {
  const out: Array<{ path: string; value: unknown; schema: TSchema }> = []
  for (const [key, property] of Object.entries(schema.properties)) {
    const path = `${base}/${key}`
    if ('default' in property) out.push({ path, value: property.default, schema: property })
    if (property[Kind] === 'Object' && property.properties) out.push(...schemaDefaults(property as TObject, path))
  }
  return out
}
