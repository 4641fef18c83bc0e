import t from 'tap'
import { chmod, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import type { AdapterOutputChunk, AdapterUsage } from '@slaw/core'
import { processAdapter } from '@slaw/adapters'
import { holdServer, wakeInput } from './helpers.js'

const agent = fileURLToPath(new URL('./fixtures/agent.mjs', import.meta.url))
/**
 * tap's coverage hook (@tapjs/processinfo) wraps child_process.spawn in the test process and adds its
 * own variables to every child; a server process has no such hook. Only those are set aside.
 */
function withoutTapHook(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([k, v]) => !k.startsWith('_TAPJS_PROCESSINFO_') && !(k === 'NODE_OPTIONS' && v.includes('@tapjs/processinfo'))))
}
const run = (mode: string, arg?: string) => ({ command: process.execPath, args: arg === undefined ? [agent, mode] : [agent, mode, arg] })

t.test("the child gets exactly the wake env plus PATH, never the server's environment", async (t) => {
  const planted = { SVC_MASTER_KEY: 'master-key-canary', DATABASE_URL: 'postgres://canary', AWS_SECRET_ACCESS_KEY: 'aws-canary', AWS_ACCESS_KEY_ID: 'AKIACANARY', REDIS_URL: 'redis://canary' }
  const saved = Object.fromEntries(Object.keys(planted).map((k) => [k, process.env[k]]))
  Object.assign(process.env, planted)
  t.teardown(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  })
  const env = { SVC_RUN_ID: 'r1', SVC_API_KEY: 'token', SVC_TASK_ID: '', TRICKY: 'spaces "quotes" \'single\' $HOME = ünïcødé\nsecond line' }
  const res = await processAdapter().wake(wakeInput({ env, config: run('env') }))
  t.equal(res.status, 'succeeded', res.error ?? '')
  const seen = withoutTapHook(JSON.parse(res.output!))
  t.same(Object.keys(seen).sort(), [...Object.keys(env), 'PATH'].sort(), 'no other variable reaches the child')
  for (const [k, v] of Object.entries(env)) t.equal(seen[k], v, `${k} arrives exactly`)
  t.equal(seen.PATH, process.env.PATH, 'PATH is inherited so commands can be found')
  for (const value of Object.values(planted)) t.notOk(res.output!.includes(value), `${value} never reaches the child`)

  const own = await processAdapter({ inheritEnv: [] }).wake(wakeInput({ env: { ONLY: 'this' }, config: run('env') }))
  t.same(withoutTapHook(JSON.parse(own.output!)), { ONLY: 'this' }, 'inheritEnv: [] gives the child exactly input.env')
  const withPath = await processAdapter().wake(wakeInput({ env: { PATH: '/agent/bin' }, config: run('env') }))
  t.equal(JSON.parse(withPath.output!).PATH, '/agent/bin', "the wake env's own PATH wins")
})

t.test('exit 0 succeeds, another exit code fails with it, and output keeps stdout and stderr', async (t) => {
  const adapter = processAdapter()
  const ok = await adapter.wake(wakeInput({ config: run('exit', '0') }))
  t.equal(ok.status, 'succeeded')
  t.equal(ok.exitCode, 0)
  t.match(ok.output, /to stdout/)
  t.match(ok.output, /to stderr/)
  const failed = await adapter.wake(wakeInput({ config: run('exit', '3') }))
  t.equal(failed.status, 'failed')
  t.equal(failed.exitCode, 3)
  t.equal(failed.error, 'the agent exited with code 3')
})

t.test('a command that cannot start resolves failed with a clear error, never throws', async (t) => {
  const adapter = processAdapter()
  const missing = await adapter.wake(wakeInput({ config: { command: '/nonexistent/agent-binary' } }))
  t.equal(missing.status, 'failed')
  t.equal(missing.error, "the agent's command was not found: /nonexistent/agent-binary")
  t.equal(missing.exitCode, null)

  const byName = await adapter.wake(wakeInput({ env: {}, config: { command: 'slaw-no-such-command-anywhere' } }))
  t.equal(byName.status, 'failed')
  t.match(byName.error, /not found: slaw-no-such-command-anywhere/)

  const dir = await mkdtemp(join(tmpdir(), 'slaw-process-'))
  const script = join(dir, 'agent.sh')
  await writeFile(script, '#!/bin/sh\nexit 0\n')
  await chmod(script, 0o644)
  const notExec = await adapter.wake(wakeInput({ config: { command: script } }))
  t.equal(notExec.status, 'failed')
  t.match(notExec.error, /not executable/)

  const badCwd = await adapter.wake(wakeInput({ config: { ...run('exit', '0'), cwd: join(dir, 'missing') } }))
  t.equal(badCwd.status, 'failed')
  t.match(badCwd.error, /working directory .*missing does not exist/)

  const none = await adapter.wake(wakeInput({ config: {} }))
  t.equal(none.status, 'failed')
  t.match(none.error, /needs a command/)
})

t.test('a hanging agent that ignores SIGTERM times out and is killed after the grace period', async (t) => {
  const timeoutMs = 300
  const started = performance.now()
  const res = await processAdapter().wake(wakeInput({ timeoutMs, graceMs: 200, config: run('hang') }))
  t.equal(res.status, 'timed_out')
  t.match(res.error, /longer than its timeout \(300 ms\)/)
  // Half: Node's timers start from the event loop's cached clock, which lags on a busy machine.
  t.ok(performance.now() - started >= timeoutMs / 2, 'not (much) before the timeout')
})

t.test('cancel stops the whole process tree, SIGTERM ignored or not', async (t) => {
  const holders = await holdServer()
  t.teardown(() => holders.close())
  const ac = new AbortController()
  const wake = processAdapter().wake(wakeInput({ graceMs: 200, signal: ac.signal, config: run('tree', String(holders.port)) }))
  await holders.opened('child')
  await holders.opened('grandchild')
  ac.abort()
  const res = await wake
  t.equal(res.status, 'cancelled')
  t.match(res.error, /cancelled/)
  await holders.closed('child')
  await holders.closed('grandchild')
  t.pass('child and grandchild are both gone')
})

t.test('an already aborted signal answers cancelled without starting anything', async (t) => {
  const ac = new AbortController()
  ac.abort()
  const res = await processAdapter().wake(wakeInput({ signal: ac.signal, config: { command: '/nonexistent' } }))
  t.equal(res.status, 'cancelled')
})

t.test('what the agent leaves running in its group is killed when it exits', async (t) => {
  const holders = await holdServer()
  t.teardown(() => holders.close())
  const res = await processAdapter().wake(wakeInput({ graceMs: 30_000, config: run('leave-behind', String(holders.port)) }))
  t.equal(res.status, 'succeeded')
  await holders.closed('grandchild')
  t.pass('the grandchild is gone')
})

t.test('megabytes of output keep a bounded tail', async (t) => {
  const res = await processAdapter().wake(wakeInput({ config: run('flood', '8') }))
  t.equal(res.status, 'succeeded', res.error ?? '')
  t.ok(Buffer.byteLength(res.output!) <= 64 * 1024, `output is at most 64 KiB (${Buffer.byteLength(res.output!)})`)
  t.ok(res.output!.endsWith('\nthe last line\n'), `and it is the end of the output (…${JSON.stringify(res.output!.slice(-40))})`)
  const small = await processAdapter({ outputTailBytes: 100 }).wake(wakeInput({ config: run('flood', '1') }))
  t.ok(Buffer.byteLength(small.output!) <= 100)
  t.ok(small.output!.endsWith('the last line\n'))
})

t.test('a last-line slawReport becomes liveness and usage; ordinary JSON logs do not', async (t) => {
  const res = await processAdapter().wake(wakeInput({ config: run('report') }))
  t.equal(res.liveness, 'advanced')
  t.same(res.usage, { model: 'm', inputTokens: 10, outputTokens: 5, costCents: 2, billingType: 'metered_api' })
  const failed = await processAdapter().wake(wakeInput({ config: run('report', '4') }))
  t.equal(failed.status, 'failed')
  t.equal(failed.liveness, 'failed', 'a failed run keeps its report too')
  t.equal((failed.usage as AdapterUsage | undefined)?.costCents, 2, 'so the money it spent is not lost')
  const unpriced = await processAdapter().wake(wakeInput({ config: run('report-unpriced') }))
  t.same(unpriced.usage, { model: 'gpt-5-codex', inputTokens: 10, outputTokens: 5, costCents: null, costStatus: 'unpriced', cacheWriteTokens: 3 }, 'costCents null: unpriced, never 0')
  const log = await processAdapter().wake(wakeInput({ config: run('json-log') }))
  t.equal(log.status, 'succeeded')
  t.equal(log.liveness, undefined)
  t.equal(log.usage, undefined)
})

t.test('close() stops running agents and refuses new wakes', async (t) => {
  const holders = await holdServer()
  t.teardown(() => holders.close())
  const adapter = processAdapter()
  const wake = adapter.wake(wakeInput({ graceMs: 200, config: run('tree', String(holders.port)) }))
  await holders.opened('child')
  await holders.opened('grandchild')
  await adapter.close!()
  t.equal((await wake).status, 'cancelled')
  await holders.closed('child')
  await holders.closed('grandchild')
  const after = await adapter.wake(wakeInput({ config: run('exit', '0') }))
  t.equal(after.status, 'cancelled')
  t.match(after.error, /closed/)
})

t.test('validateConfig', async (t) => {
  const v = processAdapter().validateConfig!
  t.same(v({ command: 'node', args: ['a.mjs'], cwd: '/tmp', env: { A: 'b' }, timeoutSec: 600, graceSec: 15 }), [])
  t.same(v({}), [{ path: '/command', message: 'a process agent needs a command (the program to start)' }])
  t.same(
    v({ command: ' ', args: 'x', cwd: 3, env: [], timeoutSec: 0, graceSec: 1.5 }).map((d) => d.path),
    ['/command', '/args', '/cwd', '/env', '/timeoutSec', '/graceSec'],
  )
  t.same(
    v({ command: 'x', args: ['a', 1] }).map((d) => d.path),
    ['/args'],
  )
})

t.test('a timeout longer than a timer can hold (24.8 days) does not fire at once', async (t) => {
  const res = await processAdapter().wake(wakeInput({ timeoutMs: 40 * 86_400_000, graceMs: 40 * 86_400_000, config: run('exit', '0') }))
  t.equal(res.status, 'succeeded')
})

t.test('onOutput sees stdout and stderr as they arrive, and a throwing listener does not break the run', async (t) => {
  const chunks: AdapterOutputChunk[] = []
  const res = await processAdapter().wake(wakeInput({ config: run('exit', '0'), onOutput: (c) => chunks.push(c) }))
  t.equal(res.status, 'succeeded')
  t.match(
    chunks
      .filter((c) => c.stream === 'stdout')
      .map((c) => c.text)
      .join(''),
    /to stdout/,
  )
  t.match(
    chunks
      .filter((c) => c.stream === 'stderr')
      .map((c) => c.text)
      .join(''),
    /to stderr/,
  )
  const throwing = await processAdapter().wake(
    wakeInput({
      config: run('exit', '0'),
      onOutput: () => {
        throw new Error('listener bug')
      },
    }),
  )
  t.equal(throwing.status, 'succeeded')
  t.match(throwing.output, /to stdout/)
})
