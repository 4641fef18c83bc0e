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
        const key = `${context}${JSON.stringify(route.schema)}`
        serialize = compiled.get(key)
        if (!serialize) compiled.set(key, (serialize = compile(route) as Serialize))
      }
      return serialize(doc)
    }
  }
}
