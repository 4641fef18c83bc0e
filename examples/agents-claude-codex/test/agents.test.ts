import t from 'tap'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runSquad, startSquad } from '../src/main.js'

// The example, run with stand-in CLIs first on PATH (test/stand-ins: they print the event streams of
// a successful run, shaped like the real CLIs'): no real CLI, login or network needed.
const standIns = fileURLToPath(new URL('./stand-ins', import.meta.url))

t.test('the squad of a Claude agent and a Codex agent runs both CLIs and records their runs', async (t) => {
  const saved = process.env.PATH
  process.env.PATH = [standIns, saved].join(':')
  t.teardown(() => {
    process.env.PATH = saved
  })
  const instance = await startSquad()
  t.teardown(() => instance.close())
  const outcomes = await runSquad(instance, mkdtempSync(join(tmpdir(), 'slaw-example-')), 60_000)
  const claude = outcomes.find((o) => o.agent === 'claude')!
  const codex = outcomes.find((o) => o.agent === 'codex')!
  t.match(claude, { status: 'succeeded', errorCode: null, summary: 'Fixed the bug and commented on the issue.' })
  t.match(claude.usage, { costStatus: 'reported', costCents: 12 })
  t.ok(claude.sessionId)
  t.match(codex, { status: 'succeeded', errorCode: null, summary: 'Implemented the endpoint and commented on the issue.' })
  t.match(codex.usage, { costStatus: 'unpriced', costCents: null, unpricedTokens: 25200 })
})
