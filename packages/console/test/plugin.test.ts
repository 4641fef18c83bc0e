import t from 'tap'
import { mkdtempSync, mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInstance } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { consolePlugin, contentSecurityPolicy } from '../src/index.js'

const operatorKey = 'slaw_op_console_plugin_test_key_0001'

async function instanceWith(root: string) {
  const instance = await createInstance({ storage: await pgliteStorage({ dataDir: 'memory://' }), operatorKey, logger: false, jobs: false })
  await instance.app.register(consolePlugin({ root }))
  t.teardown(() => instance.close())
  return instance
}

/** Whether this process has loaded @fastify/send (the console sends its files with it). */
const sendLoaded = () => Object.keys(createRequire(import.meta.url).cache).some((file) => file.includes('/@fastify/send/'))

// First in this file: the other tests request files, which loads it.
t.test('@fastify/send is loaded by the first console page, not when the plugin is registered', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'slaw-console-lazy-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  mkdirSync(join(root, 'assets'))
  writeFileSync(join(root, 'index.html'), '<!doctype html><title>slaw</title>')
  writeFileSync(join(root, 'assets', 'index-abc123.js'), 'console.log("app")')
  const { app } = await instanceWith(root)
  await app.ready()
  t.equal((await app.inject({ method: 'GET', url: '/api/health' })).statusCode, 200)
  t.notOk(sendLoaded(), 'a server that has not served the console has not loaded @fastify/send')
  t.equal((await app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html' } })).statusCode, 200)
  for (let i = 0; i < 200 && !sendLoaded(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.ok(sendLoaded(), 'the page loads it, ahead of the scripts and styles the browser asks for next')
  const asset = await app.inject({ method: 'GET', url: '/assets/index-abc123.js' })
  t.equal(asset.statusCode, 200)
  t.equal(asset.body, 'console.log("app")')
})

t.test('serves the built app: hashed assets immutable, index.html no-cache with security headers, the SPA fallback', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'slaw-console-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  mkdirSync(join(root, 'assets'))
  writeFileSync(join(root, 'index.html'), '<!doctype html><title>slaw</title><script type="module" src="/assets/index-abc123.js"></script>')
  writeFileSync(join(root, 'assets', 'index-abc123.js'), 'console.log("app")')
  writeFileSync(join(root, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>')
  const { app } = await instanceWith(root)
  const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' }

  const index = await app.inject({ method: 'GET', url: '/', headers: html })
  t.equal(index.statusCode, 200)
  t.match(index.body, /<title>slaw<\/title>/)
  t.equal(index.headers['cache-control'], 'no-cache')
  t.equal(index.headers['content-security-policy'], contentSecurityPolicy)
  t.match(contentSecurityPolicy, /^default-src 'self'; script-src 'self';/)
  t.notMatch(contentSecurityPolicy, /unsafe-inline|unsafe-eval/, 'no inline scripts')
  t.equal(index.headers['x-content-type-options'], 'nosniff')
  t.equal(index.headers['referrer-policy'], 'no-referrer')
  t.equal(index.headers['x-frame-options'], 'DENY')

  const asset = await app.inject({ method: 'GET', url: '/assets/index-abc123.js' })
  t.equal(asset.statusCode, 200)
  t.equal(asset.body, 'console.log("app")')
  t.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable')
  t.match(asset.headers['content-type'], /javascript/)
  const icon = await app.inject({ method: 'GET', url: '/favicon.svg' })
  t.equal(icon.headers['cache-control'], 'no-cache', 'unhashed files revalidate')
  const indexByName = await app.inject({ method: 'GET', url: '/index.html' })
  t.equal(indexByName.headers['cache-control'], 'no-cache')
  t.equal(indexByName.headers['content-security-policy'], contentSecurityPolicy)

  for (const url of ['/squads/abc/issues', '/settings?tab=keys', '/sign-in']) {
    const deep = await app.inject({ method: 'GET', url, headers: html })
    t.equal(deep.statusCode, 200, `${url} answers index.html`)
    t.match(deep.body, /<title>slaw<\/title>/)
    t.equal(deep.headers['content-security-policy'], contentSecurityPolicy)
  }
  t.equal((await app.inject({ method: 'GET', url: '/squads/abc', headers: { accept: 'application/json' } })).statusCode, 404, 'no fallback without text/html')
  const missingAsset = await app.inject({ method: 'GET', url: '/assets/gone-123.js' })
  t.equal(missingAsset.statusCode, 404, 'a missing asset is a 404, not index.html')
  t.equal(missingAsset.json().code, 'not_found')

  // The API keeps its own rules.
  const api = await app.inject({ method: 'GET', url: '/api/squads', headers: html })
  t.equal(api.statusCode, 401, 'the API still needs a key')
  const unknownApi = await app.inject({ method: 'GET', url: '/api/nothing-here', headers: { ...html, authorization: `Bearer ${operatorKey}` } })
  t.equal(unknownApi.statusCode, 404)
  t.equal(unknownApi.json().code, 'not_found', 'an unknown API path is a JSON 404, never index.html')
  t.equal((await app.inject({ method: 'GET', url: '/metrics', headers: html })).statusCode, 401, "/metrics is the API's")
  t.equal((await app.inject({ method: 'GET', url: '/api/health' })).statusCode, 200)
  const doc = await app.inject({ method: 'GET', url: '/api/openapi.json' })
  t.notMatch(Object.keys(doc.json().paths).join(' '), /assets|\/\*/, 'the console routes are not in the API document')
})

t.test('files: ETag, Last-Modified and 304s, HEAD, ranges, content types; no dot-files, folders or files added after the start', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'slaw-console-files-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  mkdirSync(join(root, 'assets'))
  mkdirSync(join(root, 'fonts', 'sub'), { recursive: true })
  mkdirSync(join(root, '.cache'))
  const files: Record<string, string> = {
    'index.html': '<!doctype html><title>slaw</title>',
    'assets/index-abc123.js': 'console.log("app")',
    'fonts/sub/inter.woff2': 'font',
    'data.unknownext': 'bytes',
    '.env': 'SECRET=1',
    '.cache/x.js': 'x',
  }
  const mtime = new Date('2026-01-02T03:04:05Z')
  for (const [file, content] of Object.entries(files)) {
    writeFileSync(join(root, file), content)
    utimesSync(join(root, file), mtime, mtime)
  }
  const { app } = await instanceWith(root)
  writeFileSync(join(root, 'assets', 'later-1.js'), 'later')

  const js = await app.inject({ method: 'GET', url: '/assets/index-abc123.js' })
  const etag = `W/"${(18).toString(16)}-${mtime.getTime().toString(16)}"`
  t.equal(js.headers.etag, etag, 'a weak ETag of size and modification time')
  t.equal(js.headers['last-modified'], mtime.toUTCString())
  t.equal(js.headers['accept-ranges'], 'bytes')
  t.equal(js.headers['content-type'], 'application/javascript; charset=utf-8')
  t.equal(js.headers['content-length'], '18')
  t.equal(js.headers['x-content-type-options'], 'nosniff')
  t.notOk(js.headers['content-security-policy'], 'the HTML headers are for HTML')

  const head = await app.inject({ method: 'HEAD', url: '/assets/index-abc123.js' })
  t.equal(head.statusCode, 200)
  t.equal(head.body, '')
  t.equal(head.headers['content-length'], '18')
  t.equal(head.headers.etag, etag)
  t.equal(head.headers['cache-control'], 'public, max-age=31536000, immutable')

  const notModified = await app.inject({ method: 'GET', url: '/assets/index-abc123.js', headers: { 'if-none-match': etag } })
  t.equal(notModified.statusCode, 304)
  t.equal(notModified.body, '')
  t.equal(notModified.headers['cache-control'], 'public, max-age=31536000, immutable')
  t.equal((await app.inject({ method: 'GET', url: '/assets/index-abc123.js', headers: { 'if-modified-since': mtime.toUTCString() } })).statusCode, 304)
  const index = await app.inject({ method: 'GET', url: '/index.html', headers: { 'if-none-match': `W/"${(34).toString(16)}-${mtime.getTime().toString(16)}"` } })
  t.equal(index.statusCode, 304, '/index.html revalidates')
  t.equal(index.headers['cache-control'], 'no-cache')

  const range = await app.inject({ method: 'GET', url: '/assets/index-abc123.js', headers: { range: 'bytes=0-6' } })
  t.equal(range.statusCode, 206)
  t.equal(range.body, 'console')
  t.equal(range.headers['content-range'], 'bytes 0-6/18')
  const unsatisfiable = await app.inject({ method: 'GET', url: '/assets/index-abc123.js', headers: { range: 'bytes=100-200' } })
  t.equal(unsatisfiable.statusCode, 400)
  t.equal(unsatisfiable.json().error, 'Range Not Satisfiable')
  t.equal((await app.inject({ method: 'GET', url: '/assets/index-abc123.js', headers: { 'if-match': '"other"' } })).json().error, 'Precondition Failed')

  const font = await app.inject({ method: 'GET', url: '/fonts/sub/inter.woff2' })
  t.equal(font.statusCode, 200, 'files in nested folders')
  t.equal(font.headers['content-type'], 'font/woff2')
  t.equal(font.headers['cache-control'], 'no-cache')
  t.equal((await app.inject({ method: 'GET', url: '/data.unknownext' })).headers['content-type'], 'application/octet-stream')

  for (const url of ['/.env', '/.cache/x.js', '/fonts', '/fonts/', '/assets/later-1.js']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 404, `${url} is not served`)
    t.equal(res.json().code, 'not_found')
    const page = await app.inject({ method: 'GET', url, headers: { accept: 'text/html' } })
    t.match(page.body, /<title>slaw<\/title>/, `${url} with text/html is the single-page fallback`)
  }
  t.equal((await app.inject({ method: 'POST', url: '/assets/index-abc123.js' })).statusCode, 401, "only GET and HEAD; other methods are the API's")
})

t.test('without a build: a clear "console not built" page, the API unaffected', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'slaw-console-empty-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const { app } = await instanceWith(root)
  const page = await app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html' } })
  t.equal(page.statusCode, 503)
  t.match(page.body, /console is not built/)
  t.match(page.body, /npm run build -w @slaw\/console/)
  t.equal(page.headers['content-security-policy'], contentSecurityPolicy)
  t.equal((await app.inject({ method: 'GET', url: '/api/health' })).statusCode, 200)
})
