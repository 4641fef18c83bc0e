import t from 'tap'
import { readFile, writeFile, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import type { AdapterUsage } from '@slaw/core'
import { adapterContract, resultRuleViolations } from '@slaw/core/testing'
import { claudeAdapter } from '@slaw/adapter-claude'
import { calls, fixturesDir, processGone, scratch, standIn, wakeInput } from './helpers.js'

const usageList = (u: AdapterUsage | AdapterUsage[] | undefined): AdapterUsage[] => (Array.isArray(u) ? u : u ? [u] : [])

t.test('claudeAdapter keeps the adapter contract (driving the stand-in CLI)', async (t) => {
  const dir = await scratch()
  await adapterContract(t, () => claudeAdapter(), {
    configFor: (scenario) => (scenario.kind === 'unreachable' ? { command: '/nonexistent/claude', cwd: dir } : { command: standIn, cwd: dir, extraArgs: ['--contract', JSON.stringify(scenario)] }),
    invalidConfigs: [{}, { cwd: '' }, { cwd: dir, maxTurns: 0 }, { cwd: dir, extraArgs: 'nope' }, { cwd: dir, timeoutSec: 0 }, { cwd: dir, command: '' }],
  })
})

t.test('a successful run: the command line, the prompt on stdin, usage per model, the summary and the session', async (t) => {
  const dir = await scratch()
  const res = await claudeAdapter().wake(
    wakeInput(
      dir,
      'success',
      {
        context: {
          agentPrompt: 'You are the backend engineer.',
          agentName: 'ada',
          issue: { id: 'i1', identifier: 'ENG-7', title: 'Fix the login bug', description: 'Users cannot log in.', status: 'todo' },
          comment: { id: 'c1', body: '@ada please look', authorName: 'the Operator' },
        },
      },
      { model: 'claude-sonnet-4-5', maxTurns: 30, extraArgs: ['--permission-mode', 'acceptEdits'] },
    ),
  )
  t.equal(res.status, 'succeeded', res.error ?? '')
  t.same(resultRuleViolations(res), [])
  const [call] = await calls(dir)
  t.same(call!.argv, [
    '--print',
    '-',
    '--output-format',
    'stream-json',
    '--verbose',
    '--model',
    'claude-sonnet-4-5',
    '--max-turns',
    '30',
    '--append-system-prompt',
    'You are the backend engineer.',
    '--permission-mode',
    'acceptEdits',
  ])
  t.match(call!.stdin, /assignment/, 'the prompt names the wake reason')
  t.match(call!.stdin, /ENG-7: Fix the login bug/, 'the issue identifier and title')
  t.match(call!.stdin, /Users cannot log in\./, 'the issue body')
  t.match(call!.stdin, /@ada please look/, 'the comment that woke it')
  t.match(call!.stdin, /SVC_API_URL/, 'how to reach slaw')
  t.equal(res.summary, 'Fixed the bug and commented on the issue.', "the summary is the CLI's final text")
  t.ok(res.session?.id, 'the session comes back')
  const usage = usageList(res.usage)
  t.same(
    usage.map((u) => [u.model, u.inputTokens, u.cachedInputTokens, u.cacheWriteTokens, u.outputTokens, u.costCents, u.costStatus]),
    [
      ['claude-sonnet-4-5', 1400, 30000, 2000, 700, 11, 'reported'],
      ['claude-haiku-4-5', 100, 0, 0, 100, 1, 'reported'],
    ],
    'modelUsage is counted per model, never with the per-message usage on top',
  )
  t.equal(usage[0]!.billingType, 'subscription_included', 'a CLI login is a subscription')
  t.equal(usage[0]!.provider, 'anthropic')
  t.equal(call!.env.STANDIN_SCENARIO, 'success')
  t.notOk('SVC_MASTER_KEY' in call!.env)
  t.same(
    Object.keys(call!.env)
      .filter((k) => !k.startsWith('SVC_') && !k.startsWith('STANDIN_'))
      .sort(),
    ['HOME', 'PATH'].filter((k) => process.env[k] !== undefined).sort(),
    'only PATH and HOME besides the wake env',
  )
})

t.test('the second wake resumes the session; a session the CLI does not know is retried once, fresh', async (t) => {
  const dir = await scratch()
  const adapter = claudeAdapter()
  const first = await adapter.wake(wakeInput(dir, 'success'))
  const id = first.session!.id
  const second = await adapter.wake(wakeInput(dir, 'success', { session: { id, key: 'k1' } }))
  t.equal(second.status, 'succeeded')
  t.same(second.session, { id, key: 'k1' }, 'the same session, under the key it was given')
  t.same((await calls(dir))[1]!.argv.slice(5, 7), ['--resume', id])

  const gone = await adapter.wake(wakeInput(dir, 'success', { session: { id: 'f0e1d2c3-0000-4000-8000-000000000000', key: 'k1' } }))
  const all = await calls(dir)
  t.equal(all.length, 4, 'two starts for the third wake')
  t.ok(all[2]!.argv.includes('--resume'), 'first with the saved session')
  t.notOk(all[3]!.argv.includes('--resume'), 'then fresh')
  t.equal(gone.status, 'succeeded', 'the session-not-found result (exit 0) did not end the run')
  t.not(gone.session?.id, 'f0e1d2c3-0000-4000-8000-000000000000', 'and the new session replaces the lost one')
  t.match(gone.output, /was not found; started a fresh session/)
})

t.test('max turns, rate limits, no login, garbage and a missing CLI answer failed with their error codes', async (t) => {
  const dir = await scratch()
  const adapter = claudeAdapter()
  const maxTurns = await adapter.wake(wakeInput(dir, 'max_turns', {}, { maxTurns: 2 }))
  t.equal(maxTurns.status, 'failed')
  t.equal(maxTurns.errorCode, 'max_turns')
  t.same(
    usageList(maxTurns.usage).map((u) => [u.inputTokens, u.outputTokens, u.costCents]),
    [[300, 40, 2]],
    'the turns it used are still recorded',
  )

  const reset = Math.floor(Date.now() / 1000) + 7200
  const limited = await adapter.wake(wakeInput(dir, 'rate_limit', { env: { ...wakeInput(dir, 'rate_limit').env, STANDIN_RESET_EPOCH: String(reset) } }))
  t.equal(limited.errorCode, 'transient_upstream')
  t.equal(limited.retryNotBefore?.getTime(), reset * 1000, 'retry not before the reset time the CLI named')

  const noLogin = await adapter.wake(wakeInput(dir, 'not_logged_in'))
  t.equal(noLogin.status, 'failed')
  t.equal(noLogin.errorCode, 'auth_required', 'the recorded not-logged-in stream')
  t.match(noLogin.error, /Not logged in/)
  t.equal(noLogin.exitCode, 1)
  t.equal(noLogin.usage, undefined, 'nothing was used')

  const garbage = await adapter.wake(wakeInput(dir, 'garbage'))
  t.equal(garbage.errorCode, 'unparseable_output')
  t.match(garbage.error, /Segmentation fault/)

  const missing = await adapter.wake(wakeInput(dir, 'success', {}, { command: '/nonexistent/bin/claude' }))
  t.equal(missing.status, 'failed')
  t.equal(missing.errorCode, 'command_not_found')
  for (const r of [maxTurns, limited, noLogin, garbage, missing]) t.same(resultRuleViolations(r), [])
})

t.test('a CLI that lingers after its result is stopped after a short grace, and the run succeeds', async (t) => {
  const dir = await scratch()
  const started = performance.now()
  const res = await claudeAdapter({ lingerMs: 200 }).wake(wakeInput(dir, 'linger', { timeoutMs: 30_000 }))
  t.equal(res.status, 'succeeded', 'succeeded by its result, not timed_out')
  t.equal(res.summary, 'Finished, but I linger.')
  t.equal(res.exitCode, null, 'stopped after its result: no exit code of its own')
  t.ok(performance.now() - started < 20_000, 'long before the timeout')
})

t.test('a child left running in the group is killed with it', async (t) => {
  const dir = await scratch()
  const res = await claudeAdapter().wake(wakeInput(dir, 'child'))
  t.equal(res.status, 'succeeded')
  const pid = Number(await readFile(join(dir, 'child.pid'), 'utf8'))
  t.ok(await processGone(pid), `the grandchild ${pid} is gone`)
})

t.test('a run past its timeout is timed_out with errorCode timeout', async (t) => {
  const dir = await scratch()
  const res = await claudeAdapter().wake(wakeInput(dir, 'hang', { timeoutMs: 500, graceMs: 200 }))
  t.equal(res.status, 'timed_out')
  t.equal(res.errorCode, 'timeout')
})

t.test('live output reaches onOutput', async (t) => {
  const dir = await scratch()
  let text = ''
  await claudeAdapter().wake(wakeInput(dir, 'success', { onOutput: (c) => (text += c.text) }))
  t.match(text, /"type":"result"/)
})

t.test('the command is found on PATH by default', async (t) => {
  const dir = await scratch()
  const input = wakeInput(dir, 'success', {}, { command: undefined })
  input.env.PATH = `${fixturesDir}:${process.env.PATH}`
  const res = await claudeAdapter().wake(input)
  t.equal(res.status, 'succeeded', res.error ?? '')
})

t.test('checkEnvironment: command, version, login', async (t) => {
  const dir = await scratch()
  const home = await scratch()
  const saved = process.env.HOME
  process.env.HOME = home
  t.teardown(() => {
    process.env.HOME = saved
  })
  const adapter = claudeAdapter()
  const out = await adapter.checkEnvironment!({ command: standIn, cwd: dir })
  t.equal(out.ok, false)
  t.same(
    out.checks.map((c) => [c.name, c.status]),
    [
      ['cwd', 'ok'],
      ['command', 'ok'],
      ['version', 'ok'],
      ['login', 'fail'],
    ],
  )
  t.match(out.checks[2]!.message, /2\.1\.197/)
  await mkdir(home, { recursive: true })
  await writeFile(join(home, '.claude-standin-login'), '')
  const ok = await adapter.checkEnvironment!({ command: standIn, cwd: dir })
  t.equal(ok.ok, true)
  const elsewhere = await scratch()
  const withSecret = await adapter.checkEnvironment!({
    command: standIn,
    cwd: dir,
    env: { HOME: elsewhere, ANTHROPIC_API_KEY: { type: 'secret_ref', secretId: '0199a213-81c0-7800-8aa1-bbab2a035a53' } },
  })
  t.same(
    withSecret.checks.map((c) => [c.name, c.status]),
    [
      ['cwd', 'ok'],
      ['command', 'ok'],
      ['version', 'ok'],
      ['login', 'warn'],
    ],
    'a plain HOME binding is used; a secret API key makes a missing login a warning',
  )
  t.equal(withSecret.ok, true)
  const missing = await adapter.checkEnvironment!({ command: '/nonexistent/claude', cwd: dir })
  t.same(
    missing.checks.map((c) => [c.name, c.status]),
    [
      ['cwd', 'ok'],
      ['command', 'fail'],
    ],
  )
})
