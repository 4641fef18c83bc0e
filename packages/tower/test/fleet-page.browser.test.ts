import t from 'tap'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { ADMIN_KEY, backends, heartbeatBody, startTower } from './helpers/tower.js'

const chromiumPath = '/usr/bin/chromium'
const skip = existsSync(chromiumPath) ? false : `${chromiumPath} is missing (apt-get install chromium): the fleet page's browser test needs it`
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

const squad = (localId: string, name: string) => ({ type: 'squad', localId, name, status: 'active', budgetMonthlyCents: null, spentMonthlyCents: 0, updatedAt: new Date().toISOString() })

t.test('the fleet page in Chromium: sign in, two enrolled instances, approve a pending enrollment', { skip }, async (t) => {
  // Hosts named auto-* are approved at once; the third one waits for an administrator.
  const h = await startTower(t, backends[0]!, { autoApprove: [{ kind: 'hostname', pattern: 'auto-*' }] })
  const spend = [
    { todayCents: 150, monthCents: 4200 },
    { todayCents: 0, monthCents: 99 },
  ]
  for (const [n, hostname] of ['auto-alpha.test', 'auto-beta.test'].entries()) {
    const { apiKey } = await h.enrolled({ hostname, instanceId: `inst-${n}` })
    t.equal((await h.ingest('/heartbeat', heartbeatBody({ spend: spend[n] }), apiKey)).status, 200)
    const sync = await h.ingest('/sync', { protocolVersion: 1, sentAt: new Date().toISOString(), batchCursor: '1', upserts: [squad(`sq-${n}`, `Squad ${hostname.split('.')[0]}`)], facts: [] }, apiKey)
    t.equal(sync.status, 200)
  }
  const pending = await h.ingest('/enroll', {
    protocolVersion: 1,
    instance: { machineId: 'machine-gamma', instanceId: 'default', hostname: 'gamma.test', os: 'linux', slawVersion: '0.1.0' },
    capabilities: { reportIssueTitles: true, liveStream: false },
  })
  t.equal(pending.body.state, 'pending')

  const profile = mkdtempSync(join(tmpdir(), 'slaw-chromium-'))
  t.teardown(() => rmSync(profile, { recursive: true, force: true }))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    // A small phone: the page must work at 375 px. No color scheme asked for: dark is the default.
    viewport: { width: 375, height: 740 },
  })
  t.teardown(() => context.close())
  const page = context.pages()[0] ?? (await context.newPage())
  const problems: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text())
  })

  await page.goto(h.base + '/')
  await page.getByLabel('Admin key').fill('wrong-key-123')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('status').filter({ hasText: 'That admin key is wrong.' }).waitFor()
  // The browser logs the 401 it was just answered; nothing else may fail from here on.
  problems.length = 0
  await page.getByLabel('Admin key').fill(ADMIN_KEY)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: /fleet/ }).waitFor()

  const cookies = await context.cookies()
  const session = cookies.find((c) => c.name === 'slaw_tower_session')
  t.ok(session, 'the session cookie is set')
  t.equal(session?.httpOnly, true)
  t.equal(session?.sameSite, 'Strict')
  t.equal(await page.evaluate(() => (globalThis as any).document.cookie), '', 'scripts cannot read the cookie')
  t.equal(await page.evaluate(() => JSON.stringify((globalThis as any).localStorage) + JSON.stringify((globalThis as any).sessionStorage)), '{}{}', 'the key is kept nowhere in the browser')

  const instances = page.getByRole('region', { name: /Instances/ })
  await instances.getByRole('listitem', { name: /auto-alpha\.test/ }).waitFor()
  t.equal(await instances.getByRole('listitem').count(), 2, 'both enrolled instances are listed')
  const alpha = instances.getByRole('listitem', { name: /auto-alpha\.test/ })
  t.match(await alpha.innerText(), /online/)
  t.match(await alpha.innerText(), /\$1\.50/)
  t.match(await alpha.innerText(), /\$42\.00/)
  t.match(await alpha.innerText(), /Squad auto-alpha/)
  t.match(await instances.getByRole('listitem', { name: /auto-beta\.test/ }).innerText(), /Squad auto-beta/)

  const background = await page.evaluate(() => {
    const g = globalThis as any
    return String(g.getComputedStyle(g.document.body).backgroundColor)
  })
  const [r, g, b] = background.match(/\d+/g)!.map(Number)
  t.ok(r! + g! + b! < 150, `dark by default (${background})`)
  t.ok(
    await page.evaluate(() => {
      const g = globalThis as any
      return g.document.documentElement.scrollWidth <= g.innerWidth
    }),
    'no sideways scrolling at 375 px',
  )

  // Accessibility: axe-core finds no serious or critical violation (run outside the page's CSP).
  await page.evaluate(axeSource)
  const violations = await page.evaluate(async () => {
    const result = await (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }).axe.run()
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }))
  })
  t.same(
    violations.filter((v) => v.impact === 'serious' || v.impact === 'critical'),
    [],
    `axe: ${JSON.stringify(violations)}`,
  )

  // Approve the pending enrollment by clicking its button.
  const waiting = page.getByRole('region', { name: /Pending enrollments/ })
  await waiting.getByRole('button', { name: /Reject gamma\.test/ }).waitFor()
  await waiting.getByRole('button', { name: /Approve gamma\.test/ }).click()
  await page.getByRole('heading', { name: 'Pending enrollments (0)' }).waitFor()
  t.equal(await instances.getByRole('listitem').count(), 3)
  const stored = await h.admin('GET', `/enrollments/${pending.body.enrollmentId}`)
  t.equal(stored.body.state, 'active', 'the enrollment is approved')
  t.equal(stored.body.decidedBy, 'admin')

  // Signing out ends the session: the sign-in form again.
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.getByLabel('Admin key').waitFor()
  t.same(problems, [], 'no console errors (CSP violations included)')
})
