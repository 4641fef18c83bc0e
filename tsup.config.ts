// One build config for every package: ESM + CJS + .d.ts, entries read from the package's own exports map.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { defineConfig } from 'tsup'
import { escapeBeyondLatin1 } from './scripts/latin1.mjs'

const pkg = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as {
  exports: Record<string, { 'slaw-source': string }>
  bin?: Record<string, string>
}
const exported = Object.values(pkg.exports).map((e) => e['slaw-source'])

export default defineConfig({
  entry: pkg.bin ? [...exported, './src/bin.ts'] : exported,
  format: ['esm', 'cjs'],
  // Types for what packages import; the bin is a command, not a module.
  dts: { entry: exported, compilerOptions: { customConditions: [] } },
  onSuccess: async () => {
    // The `bin` field points at bin.cjs: the ESM copy of the command would ship unused.
    if (pkg.bin) rmSync(join(process.cwd(), 'dist/bin.js'), { force: true })
    latin1Output(join(process.cwd(), 'dist'))
  },
  // No source maps: dist is unminified ESM/CJS that reads like the source, and maps (with their
  // embedded sources) would more than double every tarball. See docs/packages.md.
  sourcemap: false,
  clean: true,
  target: 'node20',
  splitting: true,
  // import.meta.url in the CommonJS build too (version lookup, file paths).
  shims: true,
  tsconfig: join(process.cwd(), '../../tsconfig.base.json'),
})

/**
 * Every built file holds Latin-1 characters only (scripts/latin1.mjs says why): esbuild escapes
 * strings already; what it keeps of comments and regular expressions it does not.
 */
function latin1Output(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const file = join(entry.parentPath, entry.name)
    // (dist/app is the console's browser build, Vite's, not tsup's.)
    if (!entry.isFile() || !/\.c?js$/.test(entry.name) || file.startsWith(join(dir, 'app'))) continue
    const text = readFileSync(file, 'utf8')
    const escaped = escapeBeyondLatin1(text)
    if (escaped !== text) writeFileSync(file, escaped)
  }
}
