// The operator console (docs/console.md), from this checkout's sources, in Debian's Chromium:
//   1. the first load's JavaScript, gzipped (every script index.html loads before the app runs);
//   2. time to interactive on loopback: a cold load of the sign-in page until its Operator key
//      field takes input, and a signed-in load of the overview until its figures are drawn;
//   3. the overview's render time on a squad of 10,000 issues and 100 agents (seeded through the
//      API), from navigation to the figures, the Needs attention list and both charts drawn.
//
//   node bench/console.mjs [--smoke]     (needs /usr/bin/chromium; PGlite in memory, 127.0.0.1 only)
//
// --smoke: 300 issues and 10 agents, 2 loads each, seconds. Results: bench/raw/console.json.
import { spawnSync, execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'

if (!process.execArgv.some((a) => a.includes('slaw-source'))) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--conditions=slaw-source', fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' })
  process.exit(r.status ?? 1)
}

const { machine, operatorKey, root, size, smoke, writeResult } = await import('./lib.mjs')
const require = createRequire(join(root, 'packages/console/package.json'))

const issueCount = size('BENCH_CONSOLE_ISSUES', 10_000, 300)
const agentCount = size('BENCH_CONSOLE_AGENTS', 100, 10)
const loads = size('BENCH_CONSOLE_LOADS', 7, 2)
const chromiumPath = '/usr/bin/chromium'
const deadline = setTimeout(
  () => {
    console.error('console: took too long, giving up')
    process.exit(1)
  },
  (smoke ? 3 : 20) * 60_000,
)
deadline.unref()

// 1. Build the app from source into a scratch folder and weigh what the first load fetches.
const appRoot = mkdtempSync(join(tmpdir(), 'slaw-bench-console-'))
process.on('exit', () => rmSync(appRoot, { recursive: true, force: true }))
const vite = join(dirname(require.resolve('vite/package.json')), 'bin', 'vite.js')
execFileSync(process.execPath, [vite, 'build', '--config', 'app/vite.config.ts', '--outDir', appRoot, '--emptyOutDir', '--logLevel', 'warn'], { cwd: join(root, 'packages/console'), stdio: 'inherit' })
const html = readFileSync(join(appRoot, 'index.html'), 'utf8')
const initialScripts = [...html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*rel="modulepreload"[^>]*\shref)="\.?\/?([^"]+\.js)"/g)].map((m) => m[1])
const gz = (file) => gzipSync(readFileSync(join(appRoot, file)), { level: 9 }).length
const initialJsGzip = initialScripts.reduce((s, f) => s + gz(f), 0)
const allJs = readdirSync(join(appRoot, 'assets')).filter((f) => f.endsWith('.js'))
const css = readdirSync(join(appRoot, 'assets')).filter((f) => f.endsWith('.css'))
const result = {
  machine: machine(),
  smoke,
  bundle: {
    initialScripts,
    initialJsGzipBytes: initialJsGzip,
    initialJsRawBytes: initialScripts.reduce((s, f) => s + readFileSync(join(appRoot, f)).length, 0),
    allJsGzipBytes: allJs.reduce((s, f) => s + gz(`assets/${f}`), 0),
    cssGzipBytes: css.reduce((s, f) => s + gz(`assets/${f}`), 0),
  },
}
console.log(`first load JavaScript: ${(initialJsGzip / 1024).toFixed(1)} KB gzipped (${initialScripts.length} file(s)); CSS ${(result.bundle.cssGzipBytes / 1024).toFixed(1)} KB`)

if (!existsSync(chromiumPath)) {
  console.log(`console: ${chromiumPath} is missing; load and render times skipped`)
  console.log(`results: ${writeResult('console.json', result)}`)
  process.exit(0)
}

// 2. An instance with the console, and a squad of `issueCount` issues and `agentCount` agents.
const { createInstance } = await import('@slaw/core')
const { pgliteStorage } = await import('@slaw/storage-pg/pglite')
const { consolePlugin } = await import('@slaw/console')
const { chromium } = await import('playwright-core')
const instance = await createInstance({
  storage: await pgliteStorage({ dataDir: 'memory://' }),
  operatorKey,
  logger: false,
  adapters: [{ type: 'process', wake: async () => ({ status: 'succeeded', exitCode: 0 }) }],
})
await instance.app.register(consolePlugin({ root: appRoot }))
const base = await instance.listen({ port: 0, host: '127.0.0.1' })
async function call(method, url, body) {
  const res = await instance.app.inject({ method, url, headers: { authorization: `Bearer ${operatorKey}` }, ...(body ? { payload: body } : {}) })
  if (res.statusCode >= 400) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`)
  return res.json()
}
const seedStart = performance.now()
const squad = (await call('POST', '/api/squads', { name: 'Bench console' })).squad
const agents = []
for (let i = 0; i < agentCount; i++) agents.push((await call('POST', `/api/squads/${squad.id}/agents`, { name: `agent-${i}`, role: 'software_engineer', adapterType: 'process' })).agent)
// Agents are paused first so assigned issues queue no runs: the bench measures the console, not runs.
for (const a of agents) await call('POST', `/api/agents/${a.id}/pause`)
const statuses = ['backlog', 'todo', 'todo', 'in_review', 'blocked', 'done', 'done', 'cancelled']
const priorities = ['critical', 'high', 'medium', 'low']
let made = 0
async function worker() {
  for (;;) {
    const i = made++
    if (i >= issueCount) return
    // One issue in ten is assigned (an assignment writes a wake request as well).
    await call('POST', `/api/squads/${squad.id}/issues`, {
      title: `Bench issue ${i}: tidy the module ${i % 97}`,
      status: statuses[i % statuses.length],
      priority: priorities[i % 4],
      ...(i % 10 === 0 ? { assigneeAgentId: agents[(i / 10) % agents.length].id } : {}),
    })
  }
}
await Promise.all(Array.from({ length: 4 }, worker))
const seedMs = performance.now() - seedStart
console.log(`seeded ${issueCount} issues and ${agentCount} agents through the API in ${(seedMs / 1000).toFixed(1)} s`)

// 3. Loads in Chromium.
const browser = await chromium.launch({
  executablePath: chromiumPath,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
})
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
try {
  const signIn = []
  for (let i = 0; i < loads; i++) {
    const context = await browser.newContext() // a cold cache every time
    const page = await context.newPage()
    const t0 = performance.now()
    await page.goto(base)
    await page.getByLabel('Operator key').waitFor()
    signIn.push(performance.now() - t0)
    await context.close()
  }

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  await page.goto(base)
  await page.getByLabel('Operator key').fill(operatorKey)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor({ timeout: 60_000 })
  const overview = []
  const ready = async () => {
    await page.locator('.stat-value').first().waitFor({ timeout: 60_000 })
    await page.locator('ul.attention, .card .empty').first().waitFor({ timeout: 60_000 })
    await page.locator('figure.chart svg').nth(1).waitFor({ timeout: 60_000 })
  }
  for (let i = 0; i < loads; i++) {
    const t0 = performance.now()
    await page.goto(`${base}/#/squads/${squad.id}`)
    await page.reload() // a full load of the page, signed in (the assets from the cache, as a returning operator)
    await ready()
    overview.push(performance.now() - t0)
  }
  const blocked = await page.locator('.stat', { hasText: 'Blocked issues' }).locator('.stat-value').textContent()
  result.loads = loads
  result.seed = { issues: issueCount, agents: agentCount, seconds: seedMs / 1000 }
  result.signInInteractiveMs = { median: median(signIn), all: signIn }
  result.overviewRenderMs = { median: median(overview), all: overview }
  result.overviewBlockedIssuesShown = blocked
  console.log(`sign-in page interactive (cold): median ${median(signIn).toFixed(0)} ms of ${loads}`)
  console.log(`overview with ${issueCount} issues and ${agentCount} agents drawn: median ${median(overview).toFixed(0)} ms of ${loads} (blocked issues shown: ${blocked})`)
} finally {
  await browser.close()
  await instance.close()
}
console.log(`results: ${writeResult('console.json', result)}`)
