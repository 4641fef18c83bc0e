// One build config for every package: ESM + CJS + .d.ts, entries read from the package's own exports map.
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { defineConfig } from 'tsup'

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
  // The `bin` field points at bin.cjs: the ESM copy of the command would ship unused.
  onSuccess: pkg.bin ? async () => rmSync(join(process.cwd(), 'dist/bin.js'), { force: true }) : undefined,
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
