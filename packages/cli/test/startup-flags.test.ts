import t from 'tap'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

// In a child process: the flags are process-wide, and this one's heap must not be the test's.
const module = fileURLToPath(new URL('../src/startup-flags.ts', import.meta.url))
const script = `
  const { holdStartupFlags, releaseStartupFlags } = await import(${JSON.stringify(module)})
  const v8 = await import('node:v8')
  holdStartupFlags()
  releaseStartupFlags()
  // Allocation where much survives a scavenge (as under load), yielding so that the cap can act.
  const keep = []
  for (let j = 0; j < 150; j++) {
    for (let i = 0; i < 2e4; i++) { const o = { i, a: [i, i + 1], s: 'x' + i }; if (i % 3 === 0) keep.push(o); if (keep.length > 2e5) keep.splice(0, 1e5) }
    await new Promise((r) => setImmediate(r))
  }
  const size = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size
  process.stdout.write(String(size / 2 ** 20))
`
const newSpaceMb = (nodeFlags: string[], headroom?: string) =>
  Number(
    execFileSync(process.execPath, [...nodeFlags, '--import=tsx', '--conditions=slaw-source', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { ...process.env, SVC_GC_HEADROOM: headroom ?? '' },
    }),
  )

t.test("by default, once serving, new space grows as V8's own, past the low cap (V8's maximum differs by Node version)", async (t) => {
  const mb = newSpaceMb([])
  t.ok(mb > 16, `new space ${mb} MB`)
})

t.test('SVC_GC_HEADROOM=low: new space grows under load up to 8 MB per semi-space, not 16', async (t) => {
  const mb = newSpaceMb([], 'low')
  t.ok(mb > 2 && mb <= 16, `new space ${mb} MB`)
})

t.test("an operator's own semi-space flag is left alone", async (t) => {
  t.equal(newSpaceMb(['--max-semi-space-size=16'], 'low'), 32)
})
