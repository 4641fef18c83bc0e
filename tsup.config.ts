// One build config for every package: ESM + CJS + .d.ts, entries read from the package's own exports map.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { defineConfig } from 'tsup'

const pkg = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as {
  exports: Record<string, { 'slaw-source': string }>
  bin?: Record<string, string>
}
const entry = Object.values(pkg.exports).map((e) => e['slaw-source'])
if (pkg.bin) entry.push('./src/bin.ts')

export default defineConfig({
  entry,
  format: ['esm', 'cjs'],
  dts: { compilerOptions: { customConditions: [] } },
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
