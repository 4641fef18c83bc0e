import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'

type SerializerFactory = ReturnType<typeof SerializerSelector>
type Serialize = (doc: unknown) => string

/** fastify's own response serializers (fast-json-stringify, with the shared schemas). */
const defaultFactory: SerializerFactory = SerializerSelector()

/**
 * Serializers compiled so far, by the text of their schemas: shared by every instance in the
 * process (a host running several instances, or a test suite running thousands, compiles each
 * response schema once).
 */
const compiled = new Map<string, Serialize>()
/** The API has about 300 response serializers; room for a host's own routes too. */
const maxCompiled = 2_000

/**
 * fastify's response serializers, each compiled the first time its route answers with that status
 * rather than when the app starts: the same fast-json-stringify functions with the same schemas and
 * options, made later. Compiling the ~300 response schemas of the API at start took about a third of
 * it (docs/startup-and-memory.md). test/schemas-compile.test.ts compiles every one, so a schema
 * fast-json-stringify refuses still fails the tests rather than a first response.
 */
export const lazySerializerFactory: SerializerFactory = (externalSchemas, options) => {
  const compile = defaultFactory(externalSchemas, options)
  const context = JSON.stringify([externalSchemas ?? null, options ?? null])
  return (route) => {
    let serialize: Serialize | undefined
    return (doc: unknown) => {
      if (!serialize) {
        const schema = forSerialization(route.schema)
        const key = `${context}${JSON.stringify(schema)}`
        serialize = compiled.get(key)
        if (!serialize) {
          compiled.set(key, (serialize = compile({ ...route, schema }) as Serialize))
          // Bounded, oldest first: each route keeps its own serializer, so forgetting one only means
          // a later instance compiles it again.
          if (compiled.size > maxCompiled) compiled.delete(compiled.keys().next().value!)
        }
      }
      return serialize(doc)
    }
  }
}

type Schema = Record<string, unknown>
const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v)
const primitive = new Set(['string', 'number', 'integer', 'boolean'])
/** Keywords that change which branch of an anyOf a value takes, or how it is written. */
const structural = ['anyOf', 'oneOf', 'allOf', 'not', 'if', '$ref', 'properties', 'items', 'const']

/**
 * A response schema as fast-json-stringify serializes it fastest, for the same output. It writes an
 * `anyOf` by running an Ajv validator on the value for each branch until one matches, for every
 * value of every response (and builds Ajv the first time). slaw's enums (`OneOf`, unions of string
 * literals) and nullable scalars (`Nullable(Type.String())`) are such unions; written as
 * `{type: 'string', enum}` and `{type: ['string', 'null']}` they need no validator. Each rewrite
 * accepts exactly what the union did, since fast-json-stringify still validates whatever anyOf is
 * left (a nullable object) against the rewritten branches. Nested `$id`s are dropped (below). Only the serializer sees this:
 * validation and the OpenAPI document keep the schemas as written.
 */
export function forSerialization(schema: unknown): unknown {
  return rewrite(schema, false, refsIn(schema, new Set()))
}

function refsIn(schema: unknown, out: Set<string>): Set<string> {
  if (Array.isArray(schema)) for (const s of schema) refsIn(s, out)
  else if (isSchema(schema)) {
    for (const [key, value] of Object.entries(schema)) {
      if (key === '$ref' && typeof value === 'string') out.add(value.split('#')[0]!)
      else refsIn(value, out)
    }
  }
  return out
}

function rewrite(schema: unknown, nested: boolean, refs: Set<string>): unknown {
  if (Array.isArray(schema)) return schema.map((s) => rewrite(s, true, refs))
  if (!isSchema(schema)) return schema
  const out: Schema = {}
  for (const [key, value] of Object.entries(schema)) {
    // A record's `$id` names it in the OpenAPI document; inside a response it only gets in the way
    // (a record used twice in one response would be two schemas with one id, which Ajv and so
    // fast-json-stringify refuse). Unless a `$ref` points at it (a recursive schema), it goes:
    // the serializer is then the one the schema compiled to before records were named.
    if (key === '$id' && nested && typeof value === 'string' && !refs.has(value)) continue
    out[key] = rewrite(value, true, refs)
  }
  const branches = out.anyOf
  if (!Array.isArray(branches) || !branches.every(isSchema)) return out
  const { anyOf: _anyOf, ...siblings } = out
  const literals = branches.every((b) => typeof b.const === 'string' && Object.keys(b).every((k) => k === 'const' || (k === 'type' && b.type === 'string')))
  if (literals && !('type' in siblings)) return { ...siblings, type: 'string', enum: branches.map((b) => b.const) }
  if (branches.length === 2 && !('type' in siblings)) {
    const nullIndex = branches.findIndex((b) => b.type === 'null' && Object.keys(b).length === 1)
    const other = branches[1 - nullIndex]
    if (nullIndex !== -1 && other && typeof other.type === 'string' && primitive.has(other.type) && !structural.some((k) => k in other)) {
      // Equivalent as a schema too, not only as output: fast-json-stringify validates the branches
      // of an enclosing anyOf with Ajv (a nullable object holding this field), and `enum` would
      // refuse the null that the union let through.
      return { ...siblings, ...other, type: [other.type, 'null'], ...(Array.isArray(other.enum) ? { enum: [...other.enum, null] } : {}) }
    }
  }
  return out
}
