import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'

type SerializerFactory = ReturnType<typeof SerializerSelector>

/** fastify's own response serializers (fast-json-stringify, with the shared schemas). */
const defaultFactory: SerializerFactory = SerializerSelector()

/**
 * fastify's response serializers, each compiled the first time its route answers with that status
 * rather than when the app starts: the same fast-json-stringify functions with the same schemas and
 * options, made later. Compiling the ~300 response schemas of the API at start took about a third of
 * it (docs/startup-and-memory.md). test/schemas-compile.test.ts compiles every one, so a schema
 * fast-json-stringify refuses still fails the tests rather than a first response.
 */
export const lazySerializerFactory: SerializerFactory = (externalSchemas, options) => {
  const compile = defaultFactory(externalSchemas, options)
  return (route) => {
    let serialize: ((doc: unknown) => string) | undefined
    return (doc: unknown) => (serialize ??= compile(route))(doc)
  }
}
