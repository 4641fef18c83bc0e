import t from 'tap'
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

// A PostgreSQL host installs @slaw/storage-pg without PGlite (an optional peer): nothing reachable
// from the main entry point may import it; only `@slaw/storage-pg/pglite` does. Checked on the
// sources, so a stray import fails here before the pack check (scripts/pack-check.mjs) would.
const src = join(dirname(fileURLToPath(import.meta.url)), '../src')

/** Every package (bare specifier) the module graph from `entry` imports, type-only imports included. */
function packagesReachedFrom(entry: string): Set<string> {
  const seen = new Set<string>()
  const packages = new Set<string>()
  const visit = (file: string): void => {
    if (seen.has(file)) return
    seen.add(file)
    const code = readFileSync(file, 'utf8')
    for (const m of code.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
      const spec = (m[1] ?? m[2])!
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')))
      else packages.add(spec)
    }
  }
  visit(join(src, entry))
  return packages
}

t.test('the main entry point never reaches PGlite', async (t) => {
  const reached = packagesReachedFrom('index.ts')
  t.ok(reached.has('postgres'), 'the walk follows the main entry (it reaches postgres.js)')
  t.notOk(reached.has('@electric-sql/pglite'), '@electric-sql/pglite is not imported from @slaw/storage-pg')
})

t.test('the pglite entry point is where PGlite lives', async (t) => {
  t.ok(packagesReachedFrom('pglite.ts').has('@electric-sql/pglite'))
})
