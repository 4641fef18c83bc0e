#!/usr/bin/env node
// `npm test`: every package's tap suite in one run. Suites that need PostgreSQL or Redis run when
// SLAW_TEST_DATABASE_URL / SLAW_TEST_REDIS_URL are set (.ci/run sets both) and are skipped, with a
// plain message, when they are not. Ends with one "N passed, N failed, N skipped" line.
import { spawn } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
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

const tap = spawn(process.execPath, [join(root, 'node_modules/tap/dist/esm/run.mjs'), '--reporter=tap', ...files], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
let tail = ''
tap.stdout.on('data', (chunk) => {
  process.stdout.write(chunk)
  tail = (tail + chunk.toString()).slice(-4000)
})
tap.on('close', (code) => {
  const summary = /# \{ (total: \d+[^}]*) \}/.exec(tail)?.[1] ?? ''
  const count = (k) => Number(new RegExp(`${k}: (\\d+)`).exec(summary)?.[1] ?? 0)
  const failed = count('fail') + count('todo') * 0
  console.log(`\n${count('pass')} passed, ${failed} failed, ${count('skip')} skipped`)
  process.exit(code ?? 1)
})
