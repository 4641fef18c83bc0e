import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

// The client's types catch wrong calls at compile time: tsc --strict on bad-calls.ts must report an
// error on every line marked `// error` and on no other line, while good-calls.ts (the same calls
// written right, and the events iterator) compiles cleanly.
const root = process.cwd()
const fixtures = join(root, 'packages/client/test-fixtures')

t.test('tsc --strict refuses wrong bodies, misspelled fields and paths, and accepts right ones', async (t) => {
  const tsc = join(root, 'node_modules/typescript/bin/tsc')
  const args = [
    tsc,
    '--noEmit',
    '--strict',
    '--target',
    'es2022',
    '--module',
    'esnext',
    '--moduleResolution',
    'bundler',
    '--customConditions',
    'slaw-source',
    '--types',
    'node',
    '--lib',
    'es2023,dom',
    '--skipLibCheck',
    join(fixtures, 'good-calls.ts'),
    join(fixtures, 'bad-calls.ts'),
  ]
  const res = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8' })
  t.not(res.status, 0, 'tsc fails')
  const reported = new Map<string, Set<number>>()
  for (const m of res.stdout.matchAll(/([\w-]+\.ts)\((\d+),\d+\): error TS\d+/g)) {
    const set = reported.get(m[1]!) ?? new Set<number>()
    set.add(Number(m[2]))
    reported.set(m[1]!, set)
  }
  t.same([...(reported.get('good-calls.ts') ?? [])], [], 'good-calls.ts compiles', { output: res.stdout })
  const marked = readFileSync(join(fixtures, 'bad-calls.ts'), 'utf8')
    .split('\n')
    .flatMap((line, i) => (line.trimEnd().endsWith('// error') ? [i + 1] : []))
  t.ok(marked.length >= 8, `${marked.length} wrong calls`)
  t.same(
    [...(reported.get('bad-calls.ts') ?? [])].sort((a, b) => a - b),
    marked,
    'an error on each wrong line and nowhere else',
    { output: res.stdout },
  )
})
