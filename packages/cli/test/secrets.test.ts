import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer } from 'node:net'
import { MasterKey } from '@slaw/core'
import { nodeEntry } from '../../../scripts/node-entry.js'

const nodeArgs = nodeEntry(new URL('../src/bin.ts', import.meta.url))
const operatorKey = 'slaw_op_cli_secrets_test_0000000'

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

/** `slaw start` until healthy, or until it exits (a refused start). */
async function start(env: Record<string, string>) {
  const port = await freePort()
  const child = spawn(process.execPath, [...nodeArgs, 'start', '--port', String(port)], {
    env: { ...process.env, LOG_LEVEL: 'warn', SVC_OPERATOR_KEY: operatorKey, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (c) => (stderr += c))
  child.stdout.resume()
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const deadline = Date.now() + 90_000
  for (;;) {
    if (child.exitCode !== null) return { port, child, exited, stderr: () => stderr, healthy: false }
    try {
      if ((await fetch(`http://127.0.0.1:${port}/api/health`)).status === 200) return { port, child, exited, stderr: () => stderr, healthy: true }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`neither healthy nor exited: ${stderr}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const api = (port: number, method: string, path: string, body?: unknown) =>
  fetch(`http://127.0.0.1:${port}${path}`, { method, headers: { authorization: `Bearer ${operatorKey}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) })

t.test('slaw start keeps a generated key in the data dir, refuses another key, and rotate-master-key moves to a new one', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'slaw-cli-secrets-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env = { SVC_DATA_DIR: dir, SVC_MASTER_KEY: '' }

  const first = await start(env)
  t.ok(first.healthy, 'first start serves')
  const squad = (await (await api(first.port, 'POST', '/api/squads', { name: 'CLI secrets' })).json()) as { squad: { id: string } }
  t.equal((await api(first.port, 'POST', `/api/squads/${squad.squad.id}/secrets`, { name: 'token', value: 'cli-value' })).status, 201)
  first.child.kill('SIGTERM')
  t.equal(await first.exited, 0)
  const file = join(dir, 'master.key')
  t.equal(statSync(file).mode & 0o777, 0o600, 'the generated key file is 0600')
  const oldKey = readFileSync(file, 'utf8').trim()

  const other = MasterKey.generate().toBase64()
  const refused = await start({ ...env, SVC_MASTER_KEY: other })
  t.notOk(refused.healthy, 'a node with another key does not serve')
  t.equal(await refused.exited, 1, 'and exits 1')
  const lines = refused
    .stderr()
    .trim()
    .split('\n')
    .filter((l) => !l.startsWith('{'))
  t.equal(lines.length, 1, 'one line')
  t.match(lines[0], /Master key mismatch.*SVC_MASTER_KEY/)
  t.notMatch(refused.stderr(), other, 'the key itself is never printed')

  const newKey = MasterKey.generate().toBase64()
  const rotate = spawnSync(process.execPath, [...nodeArgs, 'secrets', 'rotate-master-key', '--from-env', 'OLD_KEY', '--to-env', 'NEW_KEY'], {
    encoding: 'utf8',
    env: { ...process.env, ...env, OLD_KEY: oldKey, NEW_KEY: newKey },
  })
  t.equal(rotate.status, 0, `rotation exits 0: ${rotate.stderr}`)
  t.match(rotate.stdout, /secret_versions\.ref: 1 value\(s\) re-encrypted/)
  t.notMatch(rotate.stdout + rotate.stderr, newKey)
  t.equal(MasterKey.parse(readFileSync(file, 'utf8')).keyId, MasterKey.parse(newKey).keyId, 'the key file holds the new key')
  t.equal(statSync(file).mode & 0o777, 0o600, 'still 0600')

  const missing = spawnSync(process.execPath, [...nodeArgs, 'secrets', 'rotate-master-key', '--from-env', 'NOPE_UNSET', '--to-env', 'NEW_KEY'], {
    encoding: 'utf8',
    env: { ...process.env, ...env, NEW_KEY: newKey },
  })
  t.equal(missing.status, 2)
  t.match(missing.stderr, /NOPE_UNSET is not set/)

  const again = await start({ ...env, SVC_MASTER_KEY: newKey })
  t.ok(again.healthy, 'the new key starts the instance')
  again.child.kill('SIGTERM')
  t.equal(await again.exited, 0)
})
