import t from 'tap'
import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

// The app's own unit tests run under vitest (the Vite stack's runner, with the app's JSX and DOM
// types); this file runs them, and typechecks the app, so the repository's `npm test` covers both.
// `npm test` runs this file from a compiled mirror under .test-build/, which holds no app/.
const root = fileURLToPath(new URL('..', import.meta.url)).replace(`${sep}.test-build${sep}`, sep)
const require = createRequire(import.meta.url)
const bin = (pkg: string, file: string) => join(dirname(require.resolve(`${pkg}/package.json`)), file)
const run = (cmd: string, args: string[]) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [cmd, ...args],
      { cwd: root, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' }, timeout: 280_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    )
  })
// tsc over the app takes a while on a busy machine.
t.setTimeout(300_000)

t.test('the console app unit tests pass (vitest)', async (t) => {
  const res = await run(bin('vitest', 'vitest.mjs'), ['run', '--config', 'app/vite.config.ts'])
  const out = `${res.stdout}\n${res.stderr}`
  t.equal(res.status, 0, 'vitest exits 0')
  t.match(out, /Tests\s+\d+ passed/, 'vitest reports passed tests')
  t.notMatch(out, /\d+ failed/, 'and none failed')
  if (res.status !== 0) t.comment(out)
})

t.test('the console app typechecks (DOM and JSX settings of its own)', async (t) => {
  // Incremental, so the second and third runs (CI tests Node 20, 22 and 24) check only what changed.
  const buildInfo = join(root, '..', '..', 'node_modules', '.cache', 'slaw-console-app.tsbuildinfo')
  const res = await run(bin('typescript', 'bin/tsc'), ['-p', 'app/tsconfig.json', '--noEmit', '--incremental', '--tsBuildInfoFile', buildInfo])
  t.equal(res.status, 0, `tsc exits 0${res.status ? `:\n${res.stdout}${res.stderr}` : ''}`)
})
