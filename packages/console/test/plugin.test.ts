import t from 'tap'
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
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
