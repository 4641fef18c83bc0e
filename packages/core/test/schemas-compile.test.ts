import t from 'tap'
import Fastify, { type RouteOptions } from 'fastify'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import { routePlugins } from '../src/http/app.js'
import { validatorCompiler } from '../src/http/validation.js'
import { forSerialization, lazySerializerFactory } from '../src/http/serialization.js'
import { healthRoutes } from '../src/routes/health.js'
import { openapiRoutes } from '../src/routes/openapi.js'
import { ErrorBody } from '../src/schemas/common.js'

// The app compiles route validators and response serializers on first use (startup time). This
// compiles every one of them here, so that a schema Ajv or fast-json-stringify refuses fails a test
// instead of the first request to its route.

type Schemas = { body?: unknown; querystring?: unknown; params?: unknown; headers?: unknown; response?: Record<string, unknown> }

async function everyRoute(): Promise<RouteOptions[]> {
  // The app's serializer factory: the routes' own schemas name records more than once (see forSerialization).
  const app = Fastify({ schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory } } })
  const routes: RouteOptions[] = []
  app.addHook('onRoute', (route) => {
    routes.push(route)
  })
  app.decorate('slaw', { services: {} as never })
  app.addSchema(ErrorBody)
  await app.register(healthRoutes, { state: () => 'ready' })
  await app.register(openapiRoutes, { document: async () => ({}) })
  for (const plugin of routePlugins) await app.register(plugin)
  await app.ready()
  await app.close()
  return routes
}

t.test('every route validator compiles', async (t) => {
  const routes = await everyRoute()
  t.ok(routes.length > 100, `${routes.length} routes`)
  const compile = validatorCompiler()
  const refused: string[] = []
  let n = 0
  for (const route of routes) {
    const schema = (route.schema ?? {}) as Schemas
    for (const httpPart of ['body', 'querystring', 'params', 'headers'] as const) {
      if (schema[httpPart] === undefined) continue
      const validate = compile({ schema: schema[httpPart] as object, httpPart, method: route.method as string, url: route.url }) as (data: unknown, ctx: unknown) => unknown
      // The first call compiles (and throws if Ajv refuses the schema).
      try {
        validate({}, { parentData: { [httpPart]: {} }, parentDataProperty: httpPart })
      } catch (err) {
        refused.push(`${route.method} ${route.url} ${httpPart}: ${(err as Error).message}`)
      }
      n++
    }
  }
  t.same(refused, [], 'Ajv compiles every schema')
  t.ok(n > 100, `${n} validators`)
})

t.test('every response serializer compiles, eagerly and lazily', async (t) => {
  const routes = await everyRoute()
  const externalSchemas = { [ErrorBody.$id as string]: ErrorBody }
  const eager = SerializerSelector()(externalSchemas, {})
  const lazy = lazySerializerFactory(externalSchemas, {})
  const refused: string[] = []
  let n = 0
  for (const route of routes) {
    for (const [httpStatus, schema] of Object.entries((route.schema as Schemas | undefined)?.response ?? {})) {
      const def = { schema, method: String(route.method), url: route.url, httpStatus }
      try {
        // What the lazy factory compiles: the same schema with enums and nullable scalars rewritten
        // and nested record names dropped (a record used twice in a response would be two schemas
        // with one $id, which fast-json-stringify refuses as the route writes it).
        eager({ ...def, schema: forSerialization(schema) })
      } catch (err) {
        refused.push(`${route.method} ${route.url} ${httpStatus}: ${(err as Error).message}`)
      }
      n++
    }
  }
  t.same(refused, [], 'fast-json-stringify compiles every schema')
  t.ok(n > 200, `${n} serializers`)
  // The lazy one serializes as the eager one does, once called.
  const schema = { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'string' } } }
  const def = { schema, method: 'GET', url: '/x', httpStatus: '200' }
  const doc = { a: 1.7, b: 'x', c: 'dropped' }
  t.equal(lazy(def)(doc), eager(def)(doc))
})

t.test('enums and nullable scalars are serialized without a validator, to the same JSON', async (t) => {
  const { Type } = await import('@sinclair/typebox')
  const { OneOf, Nullable } = await import('../src/records/fields.js')
  const schema = Type.Object({
    status: OneOf(['open', 'closed'] as const),
    note: Nullable(Type.String()),
    at: Nullable(Type.String({ format: 'date-time' })),
    count: Nullable(Type.Integer()),
    kind: Nullable(OneOf(['a', 'b'] as const)),
    either: Type.Union([Type.String(), Type.Integer()]),
    nested: Type.Array(Type.Object({ state: OneOf(['x', 'y'] as const), by: Nullable(Type.String()) })),
    // A nullable object stays an anyOf, which fast-json-stringify checks with Ajv against the
    // rewritten fields: they must accept the same values (a null enum field included).
    last: Nullable(Type.Object({ kind: Nullable(OneOf(['a', 'b'] as const)), at: Nullable(Type.String({ format: 'date-time' })) })),
  })
  const rewritten = forSerialization(schema) as { properties: Record<string, unknown> }
  t.same(rewritten.properties.status, { type: 'string', enum: ['open', 'closed'] })
  t.same(rewritten.properties.note, { type: ['string', 'null'] })
  t.same(rewritten.properties.kind, { type: ['string', 'null'], enum: ['a', 'b', null] })
  t.ok('anyOf' in (rewritten.properties.either as object), 'a union of two types other than null is left as it is')
  t.ok('anyOf' in (schema.properties.status as object), "the route's own schema is not changed")

  const def = { schema, method: 'GET', url: '/x', httpStatus: '200' }
  const eager = SerializerSelector()({}, {})(def)
  const lazy = lazySerializerFactory({}, {})(def)
  const at = new Date('2026-11-27T10:00:00.000Z')
  for (const doc of [
    { status: 'open', note: null, at: null, count: null, kind: null, either: 'x', nested: [], last: null },
    {
      status: 'closed',
      note: 'a "quoted" note',
      at,
      count: 3,
      kind: 'b',
      either: 7,
      nested: [
        { state: 'y', by: null },
        { state: 'x', by: 'me' },
      ],
      last: { kind: null, at: null },
      extra: 'dropped',
    },
    { status: 'closed', note: null, at, count: 0, kind: 'a', either: 'y', nested: [], last: { kind: 'a', at } },
  ]) {
    t.equal(lazy(doc), eager(doc))
  }
})
