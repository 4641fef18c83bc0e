import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readStartConfig, towerClientOptions } from '@slaw/cli'
import { nodeEntry } from '../../../scripts/node-entry.js'
import { watchStart } from './helpers/listening.js'

const nodeArgs = nodeEntry(new URL('../src/bin.ts', import.meta.url))

/** Runs `slaw start --port 0` until /api/health answers 200 on the port it printed. */
async function start(env: Record<string, string>) {
  const child = spawn(process.execPath, [...nodeArgs, 'start', '--port', '0'], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  const { output, ready } = watchStart(child)
  const port = await ready
  return { child, port, output, health: await (await fetch(`http://127.0.0.1:${port}/api/health`)).json() }
}

const exited = (child: ReturnType<typeof spawn>) => new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))

t.test('config: the failed-authentication limit and the http adapter egress policy', async (t) => {
  t.same(readStartConfig([], {}).authFailureLimit, { max: 30, windowSec: 60 })
  t.same(readStartConfig([], { SVC_AUTH_FAILURE_LIMIT: '5', SVC_AUTH_FAILURE_WINDOW_SEC: '600' }).authFailureLimit, { max: 5, windowSec: 600 })
  t.equal(readStartConfig([], { SVC_AUTH_FAILURE_LIMIT: '0' }).authFailureLimit, false, '0 turns it off')
  t.throws(() => readStartConfig([], { SVC_AUTH_FAILURE_LIMIT: '-1' }), /SVC_AUTH_FAILURE_LIMIT must be an integer/)
  t.same(readStartConfig([], {}).httpEgress, { loopback: true, privateNetworks: true, linkLocal: false }, 'link-local refused by default')
  t.same(readStartConfig([], { SVC_HTTP_EGRESS_LOOPBACK: '0', SVC_HTTP_EGRESS_PRIVATE: '0', SVC_HTTP_EGRESS_LINK_LOCAL: '1' }).httpEgress, { loopback: false, privateNetworks: false, linkLocal: true })
  t.throws(() => readStartConfig([], { SVC_HTTP_EGRESS_PRIVATE: 'maybe' }), /SVC_HTTP_EGRESS_PRIVATE must be 1 or 0/)
})

t.test('config: flags over env, defaults, and clear errors', async (t) => {
  const c = readStartConfig(['--port', '4000'], { PORT: '5000', SVC_DATA_DIR: 'memory://' })
  t.equal(c.port, 4000)
  t.equal(c.host, '127.0.0.1')
  t.equal(c.dataDir, 'memory://')
  t.equal(c.tower, undefined)
  t.equal(readStartConfig([], {}).port, 3100)
  t.throws(() => readStartConfig([], { PORT: 'abc' }), /PORT must be an integer/)
  t.equal(c.metricsPort, undefined, 'metrics on the API port by default')
  t.equal(readStartConfig([], { SVC_METRICS_PORT: '9464' }).metricsPort, 9464)
  t.throws(() => readStartConfig([], { SVC_METRICS_PORT: 'x' }), /SVC_METRICS_PORT must be an integer/)
  t.equal(c.metricsMaxSquads, undefined, "the per-squad metrics limit is core's default unless set")
  t.equal(readStartConfig([], { SVC_METRICS_MAX_SQUADS: '5' }).metricsMaxSquads, 5)
  t.throws(() => readStartConfig([], { SVC_METRICS_MAX_SQUADS: '-1' }), /SVC_METRICS_MAX_SQUADS/)
  t.throws(() => readStartConfig([], { SVC_TOWER_URL: 'http://x', SVC_TOWER_MODE: 'loud' }), /SVC_TOWER_MODE/)
  const tower = readStartConfig([], { SVC_TOWER_URL: 'http://127.0.0.1:3200', SVC_TOWER_MODE: 'advisory', SVC_TOWER_SYNC_SEC: '15' })
  t.same(tower.tower && { url: tower.tower.url, mode: tower.tower.mode, syncSec: tower.tower.syncSec, heartbeatSec: tower.tower.heartbeatSec }, {
    url: 'http://127.0.0.1:3200',
    mode: 'advisory',
    syncSec: 15,
    heartbeatSec: 60,
  })
})

t.test('config: tower cadences accept 1 to 3600 s, SVC_TOWER_LIVE_STREAM offers the live channel', async (t) => {
  const base = { SVC_TOWER_URL: 'http://127.0.0.1:3200' }
  const fast = readStartConfig([], { ...base, SVC_TOWER_HEARTBEAT_SEC: '1', SVC_TOWER_SYNC_SEC: '1' }).tower
  t.same(fast && [fast.heartbeatSec, fast.syncSec], [1, 1], 'one second is accepted for both')
  const slow = readStartConfig([], { ...base, SVC_TOWER_HEARTBEAT_SEC: '3600', SVC_TOWER_SYNC_SEC: '3600' }).tower
  t.same(slow && [slow.heartbeatSec, slow.syncSec], [3600, 3600])
  t.throws(() => readStartConfig([], { ...base, SVC_TOWER_SYNC_SEC: '0' }), /SVC_TOWER_SYNC_SEC must be an integer from 1 to 3600/)
  t.throws(() => readStartConfig([], { ...base, SVC_TOWER_HEARTBEAT_SEC: '3601' }), /SVC_TOWER_HEARTBEAT_SEC must be an integer from 1 to 3600/)
  t.equal(towerClientOptions(readStartConfig([], base).tower).liveStream, false, 'off by default')
  t.equal(towerClientOptions(readStartConfig([], { ...base, SVC_TOWER_LIVE_STREAM: '1' }).tower).liveStream, true, 'SVC_TOWER_LIVE_STREAM=1 turns it on')
  t.throws(() => readStartConfig([], { ...base, SVC_TOWER_LIVE_STREAM: 'maybe' }), /SVC_TOWER_LIVE_STREAM/)
})

t.test('slaw start: first start prints an Operator key once; it works; SIGTERM exits 0', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'slaw-cli-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const first = await start({ SVC_DATA_DIR: dir, SVC_OPERATOR_KEY: '' })
  const port = first.port
  t.match(first.output(), new RegExp(`^slaw listening on http://127\\.0\\.0\\.1:${port}$`, 'm'), 'the bound port is printed')
  const health = first.health as { status: string; parts: Record<string, unknown> }
  t.equal(health.status, 'ok')
  t.same(Object.keys(health.parts).sort(), ['jobs', 'locks', 'storage', 'tower'], 'health reports each part')
  const key = /\s(slaw_op_[A-Za-z0-9_-]+)/.exec(first.output())?.[1]
  t.ok(key, 'a key was printed')
  const squads = await fetch(`http://127.0.0.1:${port}/api/squads`, { headers: { authorization: `Bearer ${key}` } })
  t.equal(squads.status, 200, 'the printed key is an Operator key')
  const unauth = await fetch(`http://127.0.0.1:${port}/api/squads`)
  t.equal(unauth.status, 401)
  first.child.kill('SIGTERM')
  t.equal(await exited(first.child), 0, 'graceful shutdown exits 0')

  const second = await start({ SVC_DATA_DIR: dir, SVC_OPERATOR_KEY: '' })
  t.notOk(/slaw_op_/.test(second.output()), 'no new key on the next start')
  const again = await fetch(`http://127.0.0.1:${second.port}/api/squads`, { headers: { authorization: `Bearer ${key}` } })
  t.equal(again.status, 200, 'the key survives a restart')
  second.child.kill('SIGINT')
  t.equal(await exited(second.child), 0)
})

t.test('slaw start: SVC_OPERATOR_KEY and memory://', async (t) => {
  const s = await start({ SVC_DATA_DIR: 'memory://', SVC_OPERATOR_KEY: 'slaw_op_cli_test_key_000000' })
  t.notOk(/slaw_op_/.test(s.output()), 'the given key is never printed')
  const res = await fetch(`http://127.0.0.1:${s.port}/api/squads`, {
    method: 'POST',
    headers: { authorization: 'Bearer slaw_op_cli_test_key_000000', 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'CLI' }),
  })
  t.equal(res.status, 201)
  s.child.kill('SIGTERM')
  t.equal(await exited(s.child), 0)
})

t.test('usage errors exit 2', async (t) => {
  const bad = spawnSync(process.execPath, [...nodeArgs, 'start', '--nope'], { encoding: 'utf8', env: { ...process.env, SVC_DATA_DIR: 'memory://' } })
  t.equal(bad.status, 2)
  t.match(bad.stderr, /slaw start:/)
  const port = spawnSync(process.execPath, [...nodeArgs, 'start'], { encoding: 'utf8', env: { ...process.env, PORT: 'abc' } })
  t.equal(port.status, 2)
  t.match(port.stderr, /PORT must be an integer/)
  const unknown = spawnSync(process.execPath, [...nodeArgs, 'frobnicate'], { encoding: 'utf8' })
  t.equal(unknown.status, 2)
  const help = spawnSync(process.execPath, [...nodeArgs, 'help'], { encoding: 'utf8' })
  t.equal(help.status, 0)
  t.match(help.stdout, /slaw <command>/)
})
