import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { watchStart } from './helpers/listening.js'

// The built command: dist/bin.cjs runs dist/slaw.bundle.cjs with a V8 code cache
// (src/bundled-program.ts). `npm install` builds it (the root's prepare script).
// (`npm test` runs this file from a compiled mirror under .test-build/, which holds no dist/.)
const dist = fileURLToPath(new URL('../dist/', import.meta.url)).replace(`${sep}.test-build${sep}`, sep)
const bin = join(dist, 'bin.cjs')
const bundle = join(dist, 'slaw.bundle.cjs')

async function start(t: Test, env: Record<string, string>) {
  const child = spawn(process.execPath, [bin, 'start', '--port', '0'], {
    env: { ...process.env, LOG_LEVEL: 'warn', NODE_DEBUG: 'slaw', SVC_DATA_DIR: 'memory://', SVC_OPERATOR_KEY: 'slaw_op_cli_bundle_test_key_0000001', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  t.teardown(() => {
    child.kill('SIGKILL')
  })
  const { output, ready } = watchStart(child)
  const url = `http://127.0.0.1:${await ready}`
  // The console's files are found through the package the bundle took them from.
  const page = await fetch(`${url}/`, { headers: { accept: 'text/html' } })
  t.equal(page.status, 200, 'the console app is served')
  t.match(await page.text(), /<div id="root">|<html/i)
  const squad = await fetch(`${url}/api/squads`, {
    method: 'POST',
    headers: { authorization: 'Bearer slaw_op_cli_bundle_test_key_0000001', 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Bundled' }),
  })
  t.equal(squad.status, 201, 'a validated, serialized, stored request')
  child.kill('SIGTERM')
  await exited
  return output()
}

t.test('the built command is the bundle, and its code cache is written, then used', async (t) => {
  t.ok(existsSync(bundle), 'dist/slaw.bundle.cjs exists (npm run build makes it)')
  const cacheDir = mkdtempSync(join(tmpdir(), 'slaw-code-cache-'))
  const first = await start(t, { NODE_COMPILE_CACHE: cacheDir })
  t.match(first, /code cache none/, 'no cache at the first start')
  t.match(first, /code cache written/, 'written once serving')
  const files = readdirSync(join(cacheDir, 'slaw'))
  t.equal(files.length, 1, 'one cache file')
  t.match(files[0], new RegExp(`^[0-9a-f]{32}-${process.version}-${process.arch}\\.v8$`), 'named after the bundle and this Node')

  const second = await start(t, { NODE_COMPILE_CACHE: cacheDir })
  t.match(second, /code cache accepted/, 'the next start uses it')
  t.notMatch(second, /code cache written/, 'and does not write it again')

  writeFileSync(join(cacheDir, 'slaw', String(files[0])), Buffer.alloc(4096, 7))
  const third = await start(t, { NODE_COMPILE_CACHE: cacheDir })
  t.match(third, /code cache rejected/, 'a damaged cache is refused by V8')
  t.match(third, /code cache written/, 'and replaced')
})

t.test('no cache where others could write it, or when turned off; the modules without the bundle', async (t) => {
  const shared = mkdtempSync(join(tmpdir(), 'slaw-code-cache-shared-'))
  chmodSync(shared, 0o777)
  const open = join(shared, 'slaw')
  mkdirSync(open, { mode: 0o777 })
  chmodSync(open, 0o777)
  t.match(await start(t, { NODE_COMPILE_CACHE: shared }), /code cache none \(disabled\)/, 'a world-writable cache directory is not used')
  t.same(readdirSync(open), [], 'nothing written there')

  const dir = mkdtempSync(join(tmpdir(), 'slaw-code-cache-off-'))
  t.match(await start(t, { NODE_COMPILE_CACHE: dir, NODE_DISABLE_COMPILE_CACHE: '1' }), /code cache none \(disabled\)/)
  t.notOk(existsSync(join(dir, 'slaw')), 'NODE_DISABLE_COMPILE_CACHE=1 writes nothing')

  t.notMatch(await start(t, { SLAW_UNBUNDLED: '1' }), /code cache/, 'SLAW_UNBUNDLED=1 loads the modules')
})
