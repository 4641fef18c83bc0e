import t from 'tap'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:net'
import postgres from 'postgres'
import { nodeEntry } from '../../../scripts/node-entry.js'

// `slaw start` never hangs on a bad start: it prints one line and exits non-zero, having closed
// what it opened.
const node = [process.execPath, ...nodeEntry(new URL('../src/bin.ts', import.meta.url))]
const databaseUrl = process.env.SLAW_TEST_DATABASE_URL

function listenOn(port = 0): Promise<Server> {
  return new Promise((resolve) => {
    const s = createServer().listen(port, '127.0.0.1', () => resolve(s))
  })
}
async function freePort(): Promise<number> {
  const s = await listenOn()
  const port = (s.address() as { port: number }).port
  await new Promise((r) => s.close(r))
  return port
}

/**
 * Runs `slaw start` and waits for it to exit. A start that hangs is killed after `hangAfterMs`
 * (a detector of the bug under test, not a timing assumption) and reported as `hung`.
 */
function runStart(env: Record<string, string>, args: string[] = [], hangAfterMs = 60_000): Promise<{ code: number | null; stderr: string; stdout: string; hung: boolean }> {
  const child = spawn(node[0]!, [...node.slice(1), 'start', ...args], {
    env: { ...process.env, LOG_LEVEL: 'fatal', SVC_OPERATOR_KEY: 'slaw_op_fail_fast_test_key_0001', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c) => (stdout += c))
  child.stderr.on('data', (c) => (stderr += c))
  let hung = false
  const timer = setTimeout(() => {
    hung = true
    child.kill('SIGKILL')
  }, hangAfterMs)
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stderr, stdout, hung })
    }),
  )
}

const lines = (s: string) => s.split('\n').filter((l) => l.trim() !== '')

t.test('port taken: one line, exit 1', async (t) => {
  const taken = await listenOn()
  t.teardown(() => new Promise((r) => taken.close(r)))
  const port = (taken.address() as { port: number }).port
  const r = await runStart({ SVC_DATA_DIR: 'memory://' }, ['--port', String(port)])
  t.equal(r.hung, false, 'it does not hang')
  t.equal(r.code, 1)
  t.same(lines(r.stderr), [`slaw start: port ${port} on 127.0.0.1 is already in use (choose another with PORT or --port)`])
})

t.test('Redis configured but unreachable: one line, exit 1', async (t) => {
  const port = await freePort()
  const r = await runStart({ SVC_DATA_DIR: 'memory://', REDIS_URL: `redis://127.0.0.1:${port}` }, ['--port', '0'])
  t.equal(r.hung, false, 'it does not hang (the Redis client is closed)')
  t.equal(r.code, 1)
  t.equal(lines(r.stderr).length, 1, r.stderr)
  t.match(r.stderr, /^slaw start: Redis at REDIS_URL is unreachable \(.*ECONNREFUSED.*\); start Redis or unset REDIS_URL/)
})

t.test('migrations fail: one line, exit 1', { skip: databaseUrl ? false : 'set SLAW_TEST_DATABASE_URL' }, async (t) => {
  const name = `slaw_t_${randomBytes(6).toString('hex')}`
  const admin = postgres(databaseUrl!, { max: 1, onnotice: () => undefined })
  await admin.unsafe(`create database ${name}`)
  t.teardown(async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`)
    await admin.end()
  })
  const url = new URL(databaseUrl!)
  url.pathname = `/${name}`
  // A database migrated by a newer slaw: a migration this version does not know was applied.
  const db = postgres(url.toString(), { max: 1, onnotice: () => undefined })
  await db.unsafe(`create table slaw_migration (name varchar(255) primary key, timestamp varchar(255) not null)`)
  await db.unsafe(`insert into slaw_migration values ('9999-from-the-future', '2030-01-01T00:00:00.000Z')`)
  await db.end()
  const r = await runStart({ DATABASE_URL: url.toString() }, ['--port', '0'])
  t.equal(r.hung, false, 'it does not hang (the pool is closed)')
  t.equal(r.code, 1)
  t.equal(lines(r.stderr).length, 1, r.stderr)
  t.match(r.stderr, /^slaw start: slaw migrations failed: .*9999-from-the-future/)
})

t.test('database unreachable: one line, exit 1', async (t) => {
  const port = await freePort()
  const r = await runStart({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/nothing` }, ['--port', '0'])
  t.equal(r.hung, false)
  t.equal(r.code, 1)
  t.equal(lines(r.stderr).length, 1, r.stderr)
  t.match(r.stderr, /^slaw start: .*unavailable \(ECONNREFUSED\)/)
})

t.test('DATABASE_URL that is not a PostgreSQL URL: one line, exit 2 (a configuration error)', async (t) => {
  const r = await runStart({ DATABASE_URL: 'memory://' }, ['--port', '0'])
  t.equal(r.hung, false)
  t.equal(r.code, 2)
  t.equal(lines(r.stderr).length, 1, r.stderr)
  t.match(r.stderr, /^slaw start: DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL \(got "memory:\.\.\."\); for the embedded database leave it unset and set SVC_DATA_DIR/)
})
