import type { FastifyPluginAsync } from 'fastify'

/** The OpenAPI 3 document, generated from the routes' TypeBox schemas. Public, like the API's shape. */
export const openapiRoutes: FastifyPluginAsync = async (app) => {
  app.get('/api/openapi.json', { config: { public: true, ungated: true }, schema: { hide: true } }, async () => app.swagger())
}
