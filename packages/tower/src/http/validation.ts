import { Ajv, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'

// ajv-formats ships CJS with a default export; unwrap it for both module systems.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as typeof addFormatsModule

type Json = Record<string, unknown>

/**
 * Rewrites a TypeBox schema into what Ajv checks fastest and explains best:
 * - a union annotated with `discriminator` (core's DiscriminatedUnion) becomes Ajv's `oneOf` +
 *   `discriminator`, so only the member named by the tag is checked and errors speak of that member;
 * - a union of literals becomes an `enum`, so a wrong value gives one error naming the allowed values.
 * TypeBox's symbol keys are dropped on the way; Ajv never reads them.
 */
function toAjvSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(toAjvSchema)
  if (schema === null || typeof schema !== 'object') return schema
  const source = schema as Json
  const out: Json = {}
  for (const [key, value] of Object.entries(source)) out[key] = key === 'default' || key === 'const' || key === 'enum' ? value : toAjvSchema(value)
  const anyOf = out.anyOf as Json[] | undefined
  if (Array.isArray(anyOf)) {
    if (out.discriminator) {
      // Ajv's discriminator reads the tag without checking the value is an object: check it first.
      out.type = 'object'
      out.oneOf = anyOf
      delete out.anyOf
    } else if (anyOf.length > 0 && anyOf.every((m) => 'const' in m && Object.keys(m).every((k) => k === 'const' || k === 'type'))) {
      out.enum = anyOf.map((m) => m.const)
      delete out.anyOf
    }
  }
  return out
}

function makeAjv(part: 'body' | 'other'): Ajv {
  const ajv = new Ajv({
    // Bodies are strict JSON: no coercion ("5" is not a number). Query strings and params are text.
    coerceTypes: part === 'body' ? false : 'array',
    useDefaults: true,
    // Unknown fields (a newer instance's additions) are accepted and dropped, never stored.
    removeAdditional: part === 'body' ? 'all' : false,
    discriminator: true,
    allErrors: false,
    strict: false,
  })
  addFormats(ajv, ['uuid', 'date-time', 'date', 'uri'])
  return ajv
}

const bodyAjv = makeAjv('body')
const otherAjv = makeAjv('other')

/** Compiles a TypeBox schema for a request body (used by the live channel too). */
export function compileBody<T>(schema: unknown): ValidateFunction<T> {
  return bodyAjv.compile<T>(toAjvSchema(schema) as object)
}

/**
 * Validators are shared by every tower app in the process, keyed by the schema's text: Ajv caches by
 * object, and `toAjvSchema` makes a new one per call, so each app would otherwise compile (and keep)
 * every schema again.
 */
const compiled = new Map<string, ValidateFunction>()

export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  return ({ schema, httpPart }) => {
    const key = `${httpPart === 'body' ? 'b' : 'o'}${JSON.stringify(schema)}`
    let validate = compiled.get(key)
    if (!validate) compiled.set(key, (validate = (httpPart === 'body' ? bodyAjv : otherAjv).compile(toAjvSchema(schema) as object)))
    return validate
  }
}
