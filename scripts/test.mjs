#!/usr/bin/env node
// `npm test`: every package's tap suite in one run. Suites that need PostgreSQL or Redis run when
// SLAW_TEST_DATABASE_URL / SLAW_TEST_REDIS_URL are set (.ci/run sets both) and are skipped, with a
// plain message, when they are not. Ends with one "N passed, N failed, N skipped" line.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
/** Every *.test.ts under <group>/<package>/test (Node 20 has no fs.globSync). */
function testFiles(group) {
  const out = []
  const walk = (dir) => {
    let entries = []
    try {
      entries = readdirSync(join(root, dir))
    } catch {
      return
    }
    for (const name of entries) {
      const rel = `${dir}/${name}`
      if (statSync(join(root, rel)).isDirectory()) walk(rel)
      else if (name.endsWith('.test.ts')) out.push(rel)
    }
  }
  for (const pkg of readdirSync(join(root, group))) walk(`${group}/${pkg}/test`)
  return out
}
const files = process.argv.slice(2).length ? process.argv.slice(2) : [...testFiles('packages'), ...testFiles('examples')].sort()

const pg = process.env.SLAW_TEST_DATABASE_URL
const redis = process.env.SLAW_TEST_REDIS_URL
console.log(`slaw tests: ${files.length} files; storage suites on PGlite${pg ? ' and PostgreSQL' : ''}.`)
if (!pg) console.log('  PostgreSQL suites SKIPPED: SLAW_TEST_DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test).')
if (!redis) console.log('  Redis suites SKIPPED: SLAW_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379).')

// tap builds its test class from the plugin list in .taprc, which leaves out @tapjs/typescript
// (ts-node in every test process: tsx runs our TypeScript). A fresh install holds tap's default
// build, and tap rebuilds only at the start of a run, after it chose the loaders for that run's test
// processes: the whole first run would load ts-node in every file. Build first when it is due.
const built = join(root, 'node_modules/@tapjs/test/test-built/dist/esm/index.js')
if (!existsSync(built) || /^@tapjs\/typescript$/m.test(readFileSync(built, 'utf8'))) {
  console.log('Building tap for the plugins in .taprc (once after an install).')
  const build = spawnSync(process.execPath, [join(root, 'node_modules/tap/dist/esm/run.mjs'), 'build'], { cwd: root, stdio: 'inherit' })
  if (build.status !== 0) process.exit(build.status ?? 1)
}

const tap = spawn(process.execPath, [join(root, 'node_modules/tap/dist/esm/run.mjs'), '--reporter=tap', ...files], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
let tail = ''
// Failures are collected as they stream by (with the names of the subtests around them and their
// diagnostics) and printed again at the end: in a CI log of ten thousand lines, the one that
// failed must not need a search.
const failures = []
const open = [] // [indent, subtest name]
let pending = ''
let diag = null
const onLine = (line) => {
  if (diag) {
    // The YAML block right after a "not ok" holds its diagnostics: from "---" to "...".
    if (!diag.lines.length && !/^\s*---\s*$/.test(line)) diag = null
    else if (/^\s*\.\.\.\s*$/.test(line)) diag = null
    else return void diag.lines.push(line)
  }
  const subtest = /^(\s*)# Subtest: (.*)$/.exec(line)
  if (subtest) {
    const indent = subtest[1].length
    while (open.length && open[open.length - 1][0] >= indent) open.pop()
    open.push([indent, subtest[2]])
    return
  }
  const notOk = /^(\s*)not ok \d+ - (.*)$/.exec(line)
  if (notOk && !/# (TODO|SKIP)/i.test(line)) {
    const indent = notOk[1].length
    const path = open.filter(([i]) => i < indent).map(([, name]) => name)
    diag = { title: [...path, notOk[2].replace(/ # time=\S+$/, '')].join(' > '), lines: [] }
    failures.push(diag)
  }
}
tap.stdout.on('data', (chunk) => {
  process.stdout.write(chunk)
  const text = chunk.toString()
  tail = (tail + text).slice(-4000)
  const lines = (pending + text).split('\n')
  pending = lines.pop() ?? ''
  for (const line of lines) onLine(line)
})
tap.on('close', (code) => {
  const summary = /# \{ (total: \d+[^}]*) \}/.exec(tail)?.[1] ?? ''
  const count = (k) => Number(new RegExp(`${k}: (\\d+)`).exec(summary)?.[1] ?? 0)
  // A parent fails because its child did: report the innermost failures only.
  const innermost = failures.filter((f) => !failures.some((g) => g !== f && g.title.startsWith(`${f.title} > `)))
  if (innermost.length) {
    console.log(`\nFailed (${innermost.length}):`)
    for (const f of innermost) {
      console.log(`  not ok: ${f.title}`)
      for (const l of f.lines.slice(1, 30)) console.log(`    ${l.trim()}`)
    }
  }
  console.log(`\n${count('pass')} passed, ${count('fail')} failed, ${count('skip')} skipped`)
  process.exit(code ?? 1)
})
