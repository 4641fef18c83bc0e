import type { FastifyPluginAsync } from 'fastify'

/** The OpenAPI 3 document, generated from the routes' TypeBox schemas. Public, like the API's shape. */
export const openapiRoutes: FastifyPluginAsync<{ document: () => Promise<unknown> }> = async (app, { document }) => {
  app.get('/api/openapi.json', { config: { public: true, ungated: true }, schema: { hide: true } }, document)
}
