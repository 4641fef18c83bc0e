import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs'
import type { ServerResponse } from 'node:http'
import { basename, dirname, join, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

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
 * The files of the build, as paths from `root` with `/` between folders: what `@fastify/static`
 * found with its glob (`**`, files only, symbolic links followed, no dot-file or dot-folder), listed
 * with `readdirSync` so that a start loads no glob library. A folder reached twice (a link loop) is
 * listed once.
 */
function appFiles(root: string, dir = '', seen = new Set<string>([realpathSync(root)])): string[] {
  const files: string[] = []
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue
    const rel = dir ? `${dir}/${entry.name}` : entry.name
    const full = join(root, rel)
    const folder = entry.isDirectory() || (entry.isSymbolicLink() && statSync(full, { throwIfNoEntry: false })?.isDirectory())
    if (!folder) {
      files.push(rel)
      continue
    }
    const real = realpathSync(full)
    if (seen.has(real)) continue
    seen.add(real)
    files.push(...appFiles(root, rel, seen))
  }
  return files
}

type Send = typeof import('@fastify/send')

let sendModule: Promise<Send> | undefined

/**
 * `@fastify/send` (ETag, Last-Modified, 304 and 412, ranges, HEAD, content types), loaded with the
 * first console request, not at start: a server nobody opens the console of never loads it.
 */
function loadSend(): Promise<Send> {
  sendModule ??= import('@fastify/send').then((module) => {
    const send = (module.default ?? module) as Send
    // What @fastify/static set when it loaded: a file of unknown extension is sent as bytes.
    ;(send.mime as { default_type?: string }).default_type = 'application/octet-stream'
    return send
  })
  return sendModule
}

/** Loads @fastify/send ahead of its first use; a failure shows on that use. */
function preloadSend(): void {
  loadSend().catch(() => undefined)
}

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

      const sendIndex = (reply: FastifyReply) => {
        // The page's scripts and styles are asked for next: @fastify/send loads once the page is
        // sent, while the browser reads it, not within the first asset's request.
        if (built && !sendModule) void reply.then(preloadSend, preloadSend)
        return reply
          .status(built ? 200 : 503)
          .headers({ ...htmlSecurityHeaders, 'cache-control': 'no-cache', 'content-type': 'text/html; charset=utf-8' })
          .send(indexHtml)
      }

      await app.register(async (scope) => {
        // The console's files are public and outside the tower gate: the app itself signs in.
        scope.addHook('onRoute', (route) => {
          // (`public`, `ungated` and `hide` are declared by @slaw/core's fastify types.)
          route.config = { ...(route.config ?? {}), public: true, ungated: true } as typeof route.config
          route.schema = { ...(route.schema ?? {}), hide: true } as typeof route.schema
        })
        if (built) {
          // One GET and HEAD route per file of the build (listed once, at start), as @fastify/static
          // registered them: no wildcard route of its own, so the API's routes and 404s are untouched
          // and the fallback below stays the only catch-all. The files are sent by @fastify/send
          // (the library @fastify/static sends with), loaded on the first request for one.
          const setHeaders = (res: ServerResponse, path: string) => {
            const rel = path.slice(root.length).split(sep).join('/')
            res.setHeader('cache-control', rel.startsWith('/assets/') ? immutable : 'no-cache')
            res.setHeader('x-content-type-options', 'nosniff')
            if (path.endsWith('.html')) for (const [name, value] of Object.entries(htmlSecurityHeaders)) res.setHeader(name, value)
          }
          const sendFile = async (request: FastifyRequest, reply: FastifyReply, file: string) => {
            const send = await loadSend()
            // @fastify/static's options: its defaults (ETag, Last-Modified, ranges), no index, no
            // cache-control of its own (set above), dot-files not found.
            const { statusCode, headers, stream, type, metadata } = await send(request.raw, encodeURI(file), {
              root,
              index: false,
              cacheControl: false,
              dotfiles: 'ignore',
            })
            if (type === 'file') {
              reply.code(statusCode)
              setHeaders(reply.raw, metadata.path)
              reply.headers(headers)
              return reply.send(stream)
            }
            // A file removed since the start (or turned into a folder) is not found; any other error
            // (412, 416, a file it may not read) is answered as fastify answers errors.
            if (type === 'directory' || (metadata.error as NodeJS.ErrnoException).code === 'ENOENT' || statusCode === 404) return reply.callNotFound()
            return reply.send(metadata.error)
          }
          for (const file of appFiles(root)) {
            scope.route({
              method: ['HEAD', 'GET'],
              url: `/${file}`,
              handler: (request, reply) => sendFile(request, reply, `/${file}`),
              errorHandler: (error, request, reply) => {
                // The client went away while the file was being sent.
                if ((error as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE') return void request.raw.destroy()
                return scope.errorHandler(error, request, reply)
              },
            })
          }
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
