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
  // The child runs with the test process's own node flags (scripts/test.mjs sets them, e.g. V8's),
  // apart from the loader and conditions, which are chosen here.
  const v8 = process.execArgv.filter((flag) => !flag.startsWith('--import') && !flag.startsWith('--conditions') && !flag.startsWith('--require'))
  if (source.includes('/.test-build/') && existsSync(compiled)) return [...v8, '--conditions=slaw-source', compiled]
  return [...v8, '--import=tsx', '--conditions=slaw-source', source]
}
