import t from 'tap'
import { spawn } from 'node:child_process'
import { readStartConfig } from '@slaw/cli'
import { nodeEntry } from '../../../scripts/node-entry.js'
import { watchStart } from './helpers/listening.js'

const nodeArgs = nodeEntry(new URL('../src/bin.ts', import.meta.url))

t.test('config: SVC_CONSOLE (default on) and SVC_CONSOLE_SESSION_HOURS', async (t) => {
  t.equal(readStartConfig([], {}).console, true, 'on by default')
  t.equal(readStartConfig([], { SVC_CONSOLE: 'off' }).console, false)
  t.equal(readStartConfig([], { SVC_CONSOLE: '0' }).console, false)
  t.equal(readStartConfig([], { SVC_CONSOLE: 'on' }).console, true)
  t.throws(() => readStartConfig([], { SVC_CONSOLE: 'maybe' }), /SVC_CONSOLE must be on or off/)
  t.equal(readStartConfig([], {}).consoleSessionHours, undefined)
  t.equal(readStartConfig([], { SVC_CONSOLE_SESSION_HOURS: '2.5' }).consoleSessionHours, 2.5)
  t.throws(() => readStartConfig([], { SVC_CONSOLE_SESSION_HOURS: '0' }), /SVC_CONSOLE_SESSION_HOURS must be a number of hours/)
  t.throws(() => readStartConfig([], { SVC_CONSOLE_SESSION_HOURS: '1000' }), /at most 720/)
})

async function start(env: Record<string, string>) {
  const child = spawn(process.execPath, [...nodeArgs, 'start', '--port', '0'], {
    env: { ...process.env, LOG_LEVEL: 'warn', SVC_DATA_DIR: 'memory://', SVC_OPERATOR_KEY: 'slaw_op_cli_console_test_key_000001', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.teardown(() => {
    child.kill('SIGTERM')
  })
  const { ready } = watchStart(child)
  return `http://127.0.0.1:${await ready}`
}

t.test('slaw start serves the console at / and signs in; SVC_CONSOLE=off serves no console', async (t) => {
  const url = await start({ SVC_CONSOLE_SESSION_HOURS: '2' })
  const page = await fetch(`${url}/`, { headers: { accept: 'text/html' } })
  t.ok(page.status === 200 || page.status === 503, `the app or its "not built" page (${page.status})`)
  t.match(page.headers.get('content-type'), /text\/html/)
  t.match(page.headers.get('content-security-policy'), /default-src 'self'/)
  await page.text()
  const signIn = await fetch(`${url}/api/console/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ operatorKey: 'slaw_op_cli_console_test_key_000001' }),
  })
  t.equal(signIn.status, 200)
  t.match(signIn.headers.get('set-cookie'), /Max-Age=7200/, 'SVC_CONSOLE_SESSION_HOURS=2')

  const off = await start({ SVC_CONSOLE: 'off' })
  const none = await fetch(`${off}/`, { headers: { accept: 'text/html' } })
  t.equal(none.status, 401, 'no console: / is an unknown route behind the API key like any other')
  await none.text()
})
