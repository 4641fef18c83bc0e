import t from 'tap'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import type { AdapterUsage } from '@slaw/core'
import { adapterContract, resultRuleViolations } from '@slaw/core/testing'
import { codexAdapter } from '@slaw/adapter-codex'
import { calls, fixturesDir, processGone, scratch, standIn, wakeInput } from './helpers.js'

const one = (u: AdapterUsage | AdapterUsage[] | undefined): AdapterUsage | undefined => (Array.isArray(u) ? u[0] : u)

t.test('codexAdapter keeps the adapter contract (driving the stand-in CLI)', async (t) => {
  const dir = await scratch()
  await adapterContract(t, () => codexAdapter(), {
    configFor: (scenario) => (scenario.kind === 'unreachable' ? { command: '/nonexistent/codex', cwd: dir } : { command: standIn, cwd: dir, extraArgs: ['--contract', JSON.stringify(scenario)] }),
    invalidConfigs: [{}, { cwd: '' }, { cwd: dir, maxTurns: 3 }, { cwd: dir, extraArgs: [1] }, { cwd: dir, graceSec: -1 }],
  })
})

t.test('a successful run: the command line, the prompt, tokens unpriced without a price, the last message and the thread', async (t) => {
  const dir = await scratch()
  const res = await codexAdapter().wake(
    wakeInput(
      dir,
      'success',
      { context: { issue: { id: 'i', identifier: 'ENG-9', title: 'Add /health', description: 'An endpoint.', status: 'todo' }, agentPrompt: 'You write Go.' } },
      { model: 'gpt-5-codex', extraArgs: ['--sandbox', 'workspace-write'] },
    ),
  )
  t.equal(res.status, 'succeeded', res.error ?? '')
  t.same(resultRuleViolations(res), [])
  const [call] = await calls(dir)
  t.same(call!.argv, ['exec', '--json', '--model', 'gpt-5-codex', '--sandbox', 'workspace-write', '-'])
  t.match(call!.stdin, /ENG-9: Add \/health/)
  t.ok(call!.stdin.startsWith('You write Go.\n\n---\n\n'), "the agent's prompt comes first (Codex has no system-prompt flag)")
  t.equal(res.summary, 'Implemented the endpoint and commented on the issue.', 'the last agent_message')
  t.ok(res.session?.id)
  t.same(
    one(res.usage),
    {
      provider: 'openai',
      model: 'gpt-5-codex',
      inputTokens: 4000,
      cachedInputTokens: 20000,
      outputTokens: 1200,
      costCents: null,
      costStatus: 'unpriced',
      billingType: 'unknown',
    },
    'cached tokens are taken out of input_tokens; Codex reports no cost, so it is unpriced, never 0',
  )
})

t.test('an operator price table makes the cost estimated', async (t) => {
  const dir = await scratch()
  const res = await codexAdapter({ prices: { 'gpt-5-codex': { inputPerMillion: 1.25, cachedInputPerMillion: 0.125, outputPerMillion: 10 } } }).wake(
    wakeInput(dir, 'success', {}, { model: 'gpt-5-codex' }),
  )
  // 4000 × 1.25 + 20000 × 0.125 + 1200 × 10 = 5000 + 2500 + 12000 = 19500 µ$ → 1.95 ¢ → 2 ¢
  t.match(one(res.usage), { costCents: 2, costStatus: 'estimated' })
  const other = await codexAdapter({ prices: { '*': { inputPerMillion: 2, outputPerMillion: 8 } } }).wake(wakeInput(dir, 'success'))
  t.match(one(other.usage), { model: 'unknown', costStatus: 'estimated' }, '* prices any model')
})

t.test('the second wake resumes the thread; an unknown thread is retried once, fresh', async (t) => {
  const dir = await scratch()
  const adapter = codexAdapter()
  const first = await adapter.wake(wakeInput(dir, 'success'))
  const id = first.session!.id
  const second = await adapter.wake(wakeInput(dir, 'success', { session: { id, key: 'k' } }))
  t.equal(second.status, 'succeeded')
  t.equal(second.session?.id, id)
  t.same((await calls(dir))[1]!.argv, ['exec', '--json', 'resume', id, '-'])
  const gone = await adapter.wake(wakeInput(dir, 'success', { session: { id: '0199a213-81c0-7800-8aa1-000000000000', key: 'k' } }))
  const all = await calls(dir)
  t.same(all[2]!.argv, ['exec', '--json', 'resume', '0199a213-81c0-7800-8aa1-000000000000', '-'])
  t.same(all[3]!.argv, ['exec', '--json', '-'], 'then fresh')
  t.equal(gone.status, 'succeeded')
  t.not(gone.session?.id, '0199a213-81c0-7800-8aa1-000000000000')
})

t.test('rate limits, no login, garbage, an untrusted directory and a missing CLI', async (t) => {
  const dir = await scratch()
  const adapter = codexAdapter()
  const limited = await adapter.wake(wakeInput(dir, 'rate_limit'))
  t.equal(limited.status, 'failed')
  t.equal(limited.errorCode, 'transient_upstream')
  t.ok(limited.retryNotBefore, 'try again at 4pm names a time')
  t.equal(limited.retryNotBefore!.getHours(), 16)
  t.ok(limited.retryNotBefore!.getTime() > Date.now(), 'the next 4pm')
  const inTen = await adapter.wake(
    wakeInput(dir, 'rate_limit', {
      env: { ...wakeInput(dir, 'x').env, STANDIN_SCENARIO: 'rate_limit', STANDIN_LIMIT_MESSAGE: 'Rate limit reached for gpt-5 on tokens per min. Please try again in 20s.' },
    }),
  )
  t.equal(inTen.errorCode, 'transient_upstream')
  t.ok(Math.abs(inTen.retryNotBefore!.getTime() - (Date.now() + 20_000)) < 5_000, 'try again in 20s')
  const noLogin = await adapter.wake(wakeInput(dir, 'not_logged_in'))
  t.equal(noLogin.errorCode, 'auth_required')
  const garbage = await adapter.wake(wakeInput(dir, 'garbage'))
  t.equal(garbage.errorCode, 'unparseable_output')
  const untrusted = await adapter.wake(wakeInput(dir, 'untrusted'))
  t.equal(untrusted.errorCode, 'untrusted_directory', 'the recorded refusal outside a git repository')
  t.match(untrusted.error, /--skip-git-repo-check/)
  const missing = await adapter.wake(wakeInput(dir, 'success', {}, { command: '/nonexistent/codex' }))
  t.equal(missing.errorCode, 'command_not_found')
  const offline = await adapter.wake(wakeInput(dir, 'no_network', { timeoutMs: 600, graceMs: 200 }))
  t.equal(offline.status, 'timed_out', 'the recorded reconnect loop ends at the timeout')
  t.equal(offline.errorCode, 'timeout')
  for (const r of [limited, inTen, noLogin, garbage, untrusted, missing, offline]) t.same(resultRuleViolations(r), [])
})

t.test('a CLI that lingers after its turn is stopped, the run succeeds; a child left running is killed', async (t) => {
  const dir = await scratch()
  const started = performance.now()
  const res = await codexAdapter({ lingerMs: 200 }).wake(wakeInput(dir, 'linger', { timeoutMs: 30_000 }))
  t.equal(res.status, 'succeeded')
  t.ok(performance.now() - started < 20_000)
  const child = await codexAdapter().wake(wakeInput(dir, 'child'))
  t.equal(child.status, 'succeeded')
  const pid = Number(await readFile(join(dir, 'child.pid'), 'utf8'))
  t.ok(await processGone(pid), 'the grandchild is gone')
})

t.test('PATH lookup and checkEnvironment', async (t) => {
  const dir = await scratch()
  const input = wakeInput(dir, 'success', {}, { command: undefined })
  input.env.PATH = `${fixturesDir}:${process.env.PATH}`
  t.equal((await codexAdapter().wake(input)).status, 'succeeded')
  const home = await scratch()
  const saved = process.env.HOME
  process.env.HOME = home
  t.teardown(() => {
    process.env.HOME = saved
  })
  const out = await codexAdapter().checkEnvironment!({ command: standIn, cwd: dir })
  t.same(
    out.checks.map((c) => [c.name, c.status]),
    [
      ['cwd', 'ok'],
      ['command', 'ok'],
      ['version', 'ok'],
      ['login', 'fail'],
    ],
  )
  await writeFile(join(home, '.codex-standin-login'), '')
  t.equal((await codexAdapter().checkEnvironment!({ command: standIn, cwd: dir })).ok, true)
})
