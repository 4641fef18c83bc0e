import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInstance } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { chromium } from 'playwright-core'
import { consolePlugin } from '../src/index.js'
import { browserSkip, buildApp, chromiumPath } from './helpers/browser.js'

// Console sign-in in a real browser: the session cookie as Chromium keeps it, used for reads and
// same-origin mutations, and refused for a mutation another origin's page sends with it.

const skip = browserSkip ?? false
const operatorKey = 'slaw_op_sign_in_browser_test_key_0001'

t.setTimeout(300_000)
t.test('sign in through the console in Chromium; the cookie works same-origin and is refused cross-origin', { skip }, async (t) => {
  const appRoot = await buildApp()
  t.teardown(() => rmSync(appRoot, { recursive: true, force: true }))
  const instance = await createInstance({ storage: await pgliteStorage({ dataDir: 'memory://' }), operatorKey, logger: false, jobs: false })
  await instance.app.register(consolePlugin({ root: appRoot }))
  const base = await instance.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => instance.close())
  const squadCount = async () => ((await (await fetch(`${base}/api/squads`, { headers: { authorization: `Bearer ${operatorKey}` } })).json()) as { squads: unknown[] }).squads.length

  // Another origin on the same host (another port: the same site, so SameSite=Strict lets the
  // cookie go along). Its page posts a form to the instance: only the Origin check stops it.
  const evil = createServer((_req, res) => {
    res.setHeader('content-type', 'text/html')
    res.end(
      `<!doctype html><title>elsewhere</title><form id="f" method="post" action="${base}/api/squads" enctype="text/plain"><input name='{"name":"forged","x":"' value='"}'><button>go</button></form>`,
    )
  })
  await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve))
  t.teardown(() => evil.close())
  const evilUrl = `http://127.0.0.1:${(evil.address() as { port: number }).port}/`

  const profile = mkdtempSync(join(tmpdir(), 'slaw-chromium-'))
  t.teardown(() => rmSync(profile, { recursive: true, force: true }))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
  t.teardown(() => context.close())
  const page = context.pages()[0] ?? (await context.newPage())
  page.setDefaultTimeout(15_000)

  await page.goto(`${base}/`)
  await page.getByLabel('Operator key').fill(operatorKey)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('button', { name: 'Sign out' }).waitFor()

  const session = (await context.cookies()).find((c) => c.name === 'slaw_session')
  t.ok(session, 'slaw_session is set')
  t.equal(session?.httpOnly, true)
  t.equal(session?.sameSite, 'Strict')
  t.equal(session?.path, '/')
  t.equal(session?.secure, false, 'not Secure over plain http')
  t.ok(session && session.expires * 1000 > Date.now() + 11.9 * 3_600_000, 'lives 12 h')
  t.equal(await page.evaluate(() => (globalThis as any).document.cookie), '', 'out of scripts’ reach')

  // The page's own requests: a read and a mutation (the browser sends the Origin itself).
  const read = await page.evaluate(async () => (await fetch('/api/console/session')).json())
  t.match(read, { session: { expiresAt: String } })
  const created = await page.evaluate(
    async () => (await fetch('/api/squads', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'From the console' }) })).status,
  )
  t.equal(created, 201, 'a same-origin mutation with the cookie')
  t.equal(await squadCount(), 1)

  // The other origin's form post carries the cookie but not this origin: 403, nothing created.
  const other = await context.newPage()
  await other.goto(evilUrl)
  const [response] = await Promise.all([other.waitForResponse(`${base}/api/squads`), other.click('button')])
  t.equal(response.status(), 403, 'cross-site request refused')
  t.match(await response.text(), /Cross-site request refused/)
  t.equal(await squadCount(), 1, 'nothing was created')
  // A script on the other origin cannot use the cookie either (CORS hides the answer; nothing is created).
  const scripted = await other.evaluate(async (url) => {
    try {
      await fetch(url, { method: 'POST', credentials: 'include', mode: 'no-cors', body: '{"name":"forged"}' })
      return 'sent'
    } catch (err) {
      return String(err)
    }
  }, `${base}/api/squads`)
  t.equal(scripted, 'sent')
  t.equal(await squadCount(), 1, 'still nothing created')
  await other.close()

  // Sign out: the row is gone and the cookie cleared.
  await page.bringToFront()
  const [signedOut] = await Promise.all([
    page.waitForResponse((r) => r.url() === `${base}/api/console/session` && r.request().method() === 'DELETE'),
    page.getByRole('button', { name: 'Sign out' }).click(),
  ])
  t.equal(signedOut.status(), 200, 'DELETE /api/console/session')
  t.equal(
    (await context.cookies()).find((c) => c.name === 'slaw_session'),
    undefined,
    'the cookie is cleared',
  )
  t.equal(await page.evaluate(async () => (await fetch('/api/console/session')).status), 401)
  await page.reload()
  await page.getByLabel('Operator key').waitFor()
  t.pass('a reload shows the sign-in form')
})
