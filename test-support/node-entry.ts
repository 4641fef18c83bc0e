import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * The node arguments that run a TypeScript entry of this repository in a child process, the way the
 * test process itself runs: `npm test` runs compiled JavaScript from .test-build/ (scripts/build-tests.mjs),
 * where the compiled file sits beside its source and needs no loader; a file run from the sources
 * (`node --import=tsx …`, an editor's test runner) gets tsx.
 */
export function nodeEntry(entry: URL): string[] {
  const source = fileURLToPath(entry)
  const compiled = source.replace(/\.ts$/, '.js')
  if (source.includes('/.test-build/') && existsSync(compiled)) return ['--conditions=slaw-source', compiled]
  return ['--import=tsx', '--conditions=slaw-source', source]
}
