import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import t from 'tap'

// docs/getting-started.md's embedding walk, run as it stands: its `host.mjs` block, word for word,
// against this repository's packages (scripts/pack-check.mjs runs it again from the tarballs).

const root = new URL('../../../', import.meta.url)
const doc = readFileSync(new URL('docs/getting-started.md', root), 'utf8')

function hostBlock(markdown: string): string {
  const block = /```js\n(\/\/ host\.mjs[\s\S]*?)```/.exec(markdown)?.[1]
  if (!block) throw new Error('docs/getting-started.md has no ```js block starting with // host.mjs')
  return block
}

t.test('the getting-started host runs: an instance, an agent, a wake, the run observed to its end', async (t) => {
  const script = hostBlock(doc)
  t.match(script, /services\.runs\.waitFor/, 'the walk observes the run without polling')
  // From the repository root, so @slaw/* resolve to this checkout (sources, through tsx).
  const run = spawnSync(process.execPath, ['--import=tsx', '--conditions=slaw-source', '--input-type=module'], { cwd: root, input: script, encoding: 'utf8', timeout: 120_000 })
  t.equal(run.status, 0, `it exits 0 (stderr: ${run.stderr.slice(-2000)})`)
  t.match(run.stdout, /^Operator key \(shown once\): slaw_op_\S+$/m, 'the created Operator key is handed over once')
  t.match(run.stdout, /^run succeeded: hello from agent [0-9a-f-]{36}$/m, 'the agent ran and the host saw its output')
})
