import { Ajv, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'

/**
 * Two validators: bodies are strict (no type coercion: `"5"` is not a number, unknown fields are
 * errors where a schema says so), while query strings and params coerce, as text is all they carry.
 */
// ajv-formats ships CJS with a default export; unwrap it for both module systems.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as typeof addFormatsModule

function makeAjv(coerce: boolean) {
  const ajv = new Ajv({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: false,
  })
  addFormats(ajv, ['uuid', 'date-time', 'date', 'uri', 'email'])
  return ajv
}

/**
 * The route validators. Each is compiled the first time its route is called, not at start: most of
 * the API's ~150 schemas are not needed in the first seconds of an instance (or ever, by one user),
 * and compiling them all took about half of the start (docs/startup-and-memory.md). The two Ajv
 * instances are made on first use too. test/schemas-compile.test.ts compiles every route's schemas,
 * so a schema Ajv refuses still fails the tests rather than a first request.
 *
 * Compiled validators are shared by every instance in the process, keyed by the schema's text: a
 * host that runs several instances (a test suite runs thousands) compiles each schema once. Ajv's
 * own cache is keyed by object, so it could not see that two instances' schemas are the same, and
 * would have grown with every instance.
 */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  return ({ schema, httpPart }) => {
    const coerce = httpPart !== 'body'
    return withoutNul(() => {
      const key = `${coerce ? 'c' : 's'}${JSON.stringify(schema)}`
      let validate = compiled.get(key)
      if (!validate) {
        validate = (coerce ? (coercing ??= makeAjv(true)) : (strict ??= makeAjv(false))).compile(schema as object)
        compiled.set(key, validate)
        // Bounded, oldest first: a route keeps the validator it was given, so forgetting one only
        // means a later instance compiles it again (a host making schemas on the fly cannot grow this).
        if (compiled.size > maxCompiled) compiled.delete(compiled.keys().next().value!)
      }
      return validate
    })
  }
}

let strict: Ajv | undefined
let coercing: Ajv | undefined
let warmed = false

/**
 * Makes both Ajv instances and compiles one small schema on each: the first validator a process
 * compiles pays for Ajv itself (its formats, the first run of its code generator), which took
 * 85-190 ms on a loaded 2-core machine against 2-12 ms for each later schema. Run in idle time
 * after the server listens (app.ts), so that the first request with a body, query or params does
 * not pay for it; each route's own schema is still compiled on its first use.
 */
export function warmValidators(): void {
  // Once per process: Ajv caches what it compiles by schema object.
  if (warmed) return
  warmed = true
  const sample = { type: 'object', properties: { id: { type: 'string', format: 'uuid' }, n: { type: 'integer', minimum: 0 }, tags: { type: 'array', items: { type: 'string' } } }, required: ['id'] }
  for (const ajv of [(strict ??= makeAjv(false)), (coercing ??= makeAjv(true))]) ajv.compile(sample)({ id: '00000000-0000-4000-8000-000000000000', n: 1, tags: [] })
}
const compiled = new Map<string, Validate>()
/** The API has a few hundred validators; room for a host's own routes too. */
const maxCompiled = 2_000

type Validate = ValidateFunction<unknown>

/**
 * PostgreSQL text and jsonb cannot hold U+0000, so a NUL anywhere in the input (a value or a key, at
 * any depth) is refused as invalid input here, before it can reach storage as a 500. `compile` makes
 * the Ajv validator, on the first input that needs it.
 */
function withoutNul(compile: () => Validate): Validate {
  let validate: Validate | undefined
  const wrapped = ((data: unknown, ctx?: Parameters<Validate>[1]) => {
    const at = nulPath(data)
    if (at !== undefined) {
      wrapped.errors = [{ instancePath: at, schemaPath: '#', keyword: 'nul', message: 'must not contain the NUL character (U+0000)', params: {} }]
      return false
    }
    validate ??= compile()
    const ok = validate(data, ctx)
    wrapped.errors = validate.errors ?? null
    return ok
  }) as Validate
  // Fastify passes the parent object (so that a root value can be coerced) to a function that has a
  // schemaEnv, as every Ajv function has; the real one is made later, so say so now.
  Object.assign(wrapped, { schemaEnv: true })
  return wrapped
}

/** JSON-pointer path of the first string or key holding a NUL, if any; iterative, so depth is no risk. */
function nulPath(root: unknown): string | undefined {
  const stack: Array<[unknown, string]> = [[root, '']]
  while (stack.length) {
    const [value, path] = stack.pop()!
    if (typeof value === 'string') {
      if (value.includes('\0')) return path
    } else if (Array.isArray(value)) {
      for (const [i, v] of value.entries()) stack.push([v, `${path}/${i}`])
    } else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        const child = `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`
        if (k.includes('\0')) return child
        stack.push([v, child])
      }
    }
  }
  return undefined
}
