#!/usr/bin/env node
// `npm test`: every package's tap suite in one run. Suites that need PostgreSQL or Redis run when
// SLAW_TEST_DATABASE_URL / SLAW_TEST_REDIS_URL are set (.ci/run sets both) and are skipped, with a
// plain message, when they are not. Ends with one "N passed, N failed, N skipped" line.
//
// The TypeScript is compiled once into .test-build/ (scripts/build-tests.mjs) and each test file
// runs as plain JavaScript in a process of its own, a few at a time. Tests are written with tap;
// this script is their runner rather than tap's, whose runner loads a coverage hook, a mock loader
// and source-map support into every test process (a third of the CPU of a run was loading
// modules): docs/testing.md.
import { spawn } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { buildTests, testBuildDir } from './build-tests.mjs'
import { root } from './workspaces.mjs'

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

const args = process.argv.slice(2)
const jobsArg = args.find((a) => a.startsWith('--jobs='))
const named = args.filter((a) => !a.startsWith('--'))
// Named files may be given as paths from the root or from anywhere (shell completion): keep them relative to the root.
const files = named.length ? named.map((f) => relative(root, join(process.cwd(), f))) : [...testFiles('packages'), ...testFiles('examples')].sort()
for (const f of files) {
  if (!existsSync(join(root, f)) || !f.endsWith('.ts')) {
    console.error(`No such test file: ${f}`)
    process.exit(2)
  }
}
// Some test files spend much of their time waiting (timers, child processes, the database), so one
// job more than the cores keeps the machine busy.
const jobs = Number(jobsArg?.slice('--jobs='.length) ?? process.env.SLAW_TEST_JOBS ?? availableParallelism() + 1)
/** A file that has not finished by then is stopped and counted as failed (tap's own limit is the same). */
const fileTimeoutSeconds = 120

// Longest first, so that the run does not end waiting on one slow file started last: by the times of
// the last run on this checkout, else by size (a fair guess on a fresh clone).
const timingsFile = join(root, 'node_modules/.cache/slaw-tests/timings.json')
const lastTimes = (() => {
  try {
    return JSON.parse(readFileSync(timingsFile, 'utf8'))
  } catch {
    return {}
  }
})()
const weight = (f) => lastTimes[f] ?? statSync(join(root, f)).size
files.sort((a, b) => weight(b) - weight(a))

const pg = process.env.SLAW_TEST_DATABASE_URL
const redis = process.env.SLAW_TEST_REDIS_URL
console.log(`slaw tests: ${files.length} files, ${jobs} at a time; storage suites on PGlite${pg ? ' and PostgreSQL' : ''}.`)
if (!pg) console.log('  PostgreSQL suites SKIPPED: SLAW_TEST_DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test).')
if (!redis) console.log('  Redis suites SKIPPED: SLAW_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379).')

await buildTests()

/** Runs one compiled test file; resolves with its TAP output, exit status and counts. */
function runFile(file) {
  const started = Date.now()
  const compiled = join(testBuildDir, file.replace(/\.ts$/, '.js'))
  return new Promise((resolve) => {
    // --liftoff-only: PGlite's 9 MB of WebAssembly stays on V8's baseline compiler. A test process
    // lives seconds, too short for optimised wasm to repay compiling it: a quarter of a PGlite
    // test file's CPU went to that (docs/testing.md).
    const child = spawn(process.execPath, ['--liftoff-only', '--conditions=slaw-source', compiled], {
      cwd: root,
      // TAP_TIMEOUT: tap's in-process limit for the file, the same as ours below.
      env: { ...process.env, TAP: '1', TAP_TIMEOUT: String(fileTimeoutSeconds) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (c) => (out += c))
    child.stderr.on('data', (c) => (err += c))
    let timedOut = false
    // tap stops a file at its limit itself; this is for a file that hangs beyond tap's reach.
    const timer = setTimeout(
      () => {
        timedOut = true
        try {
          process.kill(-child.pid, 'SIGKILL')
        } catch {
          // gone already
        }
      },
      (fileTimeoutSeconds + 15) * 1000,
    )
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      // A file's own children (servers it started) go with it.
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {
        // none left
      }
      const counts = /^# (\{ total: \d+[^}]*\})\s*$/m.exec(out)?.[1]
      const count = (k) => Number(new RegExp(`${k}: (\\d+)`).exec(counts ?? '')?.[1] ?? 0)
      resolve({ file, out, err, code, signal, timedOut, ms: Date.now() - started, counts: counts ? { pass: count('pass'), fail: count('fail'), skip: count('skip') + count('todo') } : undefined })
    })
  })
}

// Failures are collected from each file's TAP (with the names of the subtests around them and
// their diagnostics) and printed again at the end: in a CI log of ten thousand lines, the one that
// failed must not need a search.
function failuresOf(file, tap) {
  const failures = []
  const open = [] // [indent, subtest name]
  let diag = null
  for (const line of tap.split('\n')) {
    if (diag) {
      // The YAML block right after a "not ok" holds its diagnostics: from "---" to "...".
      if (!diag.lines.length && !/^\s*---\s*$/.test(line)) diag = null
      else if (/^\s*\.\.\.\s*$/.test(line)) {
        diag = null
        continue
      } else {
        diag.lines.push(line)
        continue
      }
    }
    const subtest = /^(\s*)# Subtest: (.*)$/.exec(line)
    if (subtest) {
      const indent = subtest[1].length
      while (open.length && open[open.length - 1][0] >= indent) open.pop()
      open.push([indent, subtest[2]])
      continue
    }
    const notOk = /^(\s*)not ok \d+ - (.*)$/.exec(line)
    if (notOk && !/# (TODO|SKIP)/i.test(line)) {
      const indent = notOk[1].length
      const path = open.filter(([i]) => i < indent).map(([, name]) => name)
      diag = { title: [file, ...path, notOk[2].replace(/ # time=\S+$/, '')].join(' > '), lines: [] }
      failures.push(diag)
    }
  }
  // A parent fails because its child did: report the innermost failures only.
  return failures.filter((f) => !failures.some((g) => g !== f && g.title.startsWith(`${f.title} > `)))
}

const indent = (text) =>
  text
    .replace(/\n$/, '')
    .split('\n')
    .map((l) => (l ? `    ${l}` : l))
    .join('\n')
const totals = { pass: 0, fail: 0, skip: 0 }
const failures = []
const started = Date.now()
let next = 0
let number = 0
console.log('TAP version 14')
async function worker() {
  while (next < files.length) {
    const r = await runFile(files[next++])
    number++
    times[r.file] = r.ms
    // Each file's TAP as a subtest of the run, printed whole when the file ends (files run in parallel).
    process.stdout.write(`# Subtest: ${r.file}\n${indent(r.out)}\n`)
    if (r.err.trim())
      process.stdout.write(
        `${indent(
          r.err
            .trim()
            .split('\n')
            .map((l) => `# ${l}`)
            .join('\n'),
        )}\n`,
      )
    const ok = r.code === 0 && r.counts !== undefined && r.counts.fail === 0
    if (r.counts) {
      totals.pass += r.counts.pass
      totals.fail += r.counts.fail
      totals.skip += r.counts.skip
    }
    const found = failuresOf(r.file, r.out)
    if (!ok) {
      // A file that failed without a failing assertion (it crashed, hung, or exited non-zero) is one failure.
      if (!r.counts || r.counts.fail === 0) totals.fail++
      if (!found.length) {
        const why = r.timedOut ? `did not finish in ${fileTimeoutSeconds} s` : r.signal ? `ended by ${r.signal}` : `exited with ${r.code}`
        found.push({ title: `${r.file} (${why})`, lines: ['', ...r.err.trim().split('\n').slice(-25)] })
      }
    }
    failures.push(...found)
    process.stdout.write(`${ok ? 'ok' : 'not ok'} ${number} - ${r.file} # time=${r.ms}ms\n`)
  }
}
const times = { ...lastTimes }
await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, files.length)) }, worker))
try {
  mkdirSync(dirname(timingsFile), { recursive: true })
  writeFileSync(timingsFile, JSON.stringify(times))
} catch {
  // only an ordering hint
}
console.log(`1..${files.length}`)
console.log(`# time=${Date.now() - started}ms`)

if (failures.length) {
  console.log(`\nFailed (${failures.length}):`)
  for (const f of failures) {
    console.log(`  not ok: ${f.title}`)
    // Diagnostics can quote a minified line of a dependency: keep each line readable.
    for (const l of f.lines.slice(1, 30)) console.log(`    ${l.trim().length > 300 ? `${l.trim().slice(0, 300)}…` : l.trim()}`)
  }
}
console.log(`\n${totals.pass} passed, ${totals.fail} failed, ${totals.skip} skipped`)
process.exit(totals.fail || failures.length ? 1 : 0)
