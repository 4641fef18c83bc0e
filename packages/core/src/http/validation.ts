import { Ajv } from 'ajv'
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

export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const strict = makeAjv(false)
  const coercing = makeAjv(true)
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema as object)
}
