import { existsSync, readFileSync } from 'node:fs'
import { basename, dirname, join, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import fastifyStatic from '@fastify/static'

export interface ConsolePluginOptions {
  /**
   * The folder of the built app (its `index.html` and `assets/`). Default: `dist/app` of this
   * package, where `npm run build -w @slaw/console` writes it.
   */
  root?: string
}

/**
 * The Content-Security-Policy of the console's HTML: everything from this origin only, no inline
 * scripts, no plugins, never framed. The app talks to `/api/*` on the same origin.
 */
export const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

/** Headers of every HTML answer (the app's index.html, the fallback, the "not built" page). */
export const htmlSecurityHeaders: Readonly<Record<string, string>> = {
  'content-security-policy': contentSecurityPolicy,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
}

/** Hashed build output: the file name changes whenever its content does. */
const immutable = 'public, max-age=31536000, immutable'

/** Where the built app is by default: `dist/app`, from the source (`src/`) or the build (`dist/`). */
export function defaultAppRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url))
  return basename(here) === 'src' ? resolve(here, '..', 'dist', 'app') : join(here, 'app')
}

/** Paths the console never answers: the API and the metrics endpoint keep their own 404s. */
const notConsole = (path: string): boolean => path === '/api' || path.startsWith('/api/') || path === '/metrics' || path.startsWith('/metrics/')

const acceptsHtml = (request: FastifyRequest): boolean => String(request.headers.accept ?? '').includes('text/html')

const notBuiltPage = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>slaw console not built</title></head>
<body>
<main>
<h1>The slaw console is not built</h1>
<p>This server serves the console from <code>packages/console/dist/app</code>, which does not exist yet.
Build it with <code>npm run build -w @slaw/console</code> (or <code>npm run build</code> at the repository root) and restart.</p>
<p>The API is unaffected: <code>/api/health</code>, <code>/api/openapi.json</code>.</p>
</main>
</body>
</html>
`

/**
 * Serves the operator console (docs/console.md) at `/`: the built app's files (hashed `/assets/*`
 * cached for a year as immutable, everything else revalidated), `index.html` with `no-cache` and a
 * strict Content-Security-Policy, and the single-page fallback: a GET that accepts HTML and is not
 * under `/api/` or `/metrics` answers `index.html`. Register it on a slaw instance's app:
 * `instance.app.register(consolePlugin())`. Its routes need no key (the app signs in through
 * `POST /api/console/session`); the API keeps its own authentication.
 */
export function consolePlugin(options: ConsolePluginOptions = {}) {
  return fp(
    async (app: FastifyInstance) => {
      const root = resolve(options.root ?? defaultAppRoot())
      const indexFile = join(root, 'index.html')
      const built = existsSync(indexFile)
      // Read once: the fallback answers it for every client-side route.
      const indexHtml = built ? readFileSync(indexFile) : Buffer.from(notBuiltPage)

      const sendIndex = (reply: FastifyReply) =>
        reply
          .status(built ? 200 : 503)
          .headers({ ...htmlSecurityHeaders, 'cache-control': 'no-cache', 'content-type': 'text/html; charset=utf-8' })
          .send(indexHtml)

      await app.register(async (scope) => {
        // The console's files are public and outside the tower gate: the app itself signs in.
        scope.addHook('onRoute', (route) => {
          // (`public`, `ungated` and `hide` are declared by @slaw/core's fastify types.)
          route.config = { ...(route.config ?? {}), public: true, ungated: true } as typeof route.config
          route.schema = { ...(route.schema ?? {}), hide: true } as typeof route.schema
        })
        if (built) {
          await scope.register(fastifyStatic, {
            root,
            prefix: '/',
            // One route per file of the build (found once, at start): no wildcard route of its own,
            // so the API's routes and 404s are untouched and the fallback below stays the only catch-all.
            wildcard: false,
            index: false,
            decorateReply: false,
            cacheControl: false,
            dotfiles: 'ignore',
            setHeaders(res, path) {
              const rel = path.slice(root.length).split(sep).join('/')
              res.setHeader('cache-control', rel.startsWith('/assets/') ? immutable : 'no-cache')
              res.setHeader('x-content-type-options', 'nosniff')
              if (path.endsWith('.html')) for (const [name, value] of Object.entries(htmlSecurityHeaders)) res.setHeader(name, value)
            },
          })
        }
        scope.get('/', async (_request, reply) => sendIndex(reply))
        scope.get('/*', async (request, reply) => {
          const path = request.url.split('?')[0]!
          if (notConsole(path) || !acceptsHtml(request)) return reply.callNotFound()
          return sendIndex(reply)
        })
      })
    },
    { name: 'slaw-console', fastify: '5.x' },
  )
}

export default consolePlugin
