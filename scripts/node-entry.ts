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
  // --liftoff-only, as for the test processes (scripts/test.mjs): a child that lives seconds does
  // not repay optimising PGlite's WebAssembly.
  if (source.includes('/.test-build/') && existsSync(compiled)) return ['--liftoff-only', '--conditions=slaw-source', compiled]
  return ['--liftoff-only', '--import=tsx', '--conditions=slaw-source', source]
}
