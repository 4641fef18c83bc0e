import * as nodeModule from 'node:module'

// Node's cache of compiled module code on disk (Node 22.1+, `module.enableCompileCache()`): a start
// then reads V8's code for the ~900 modules it loads instead of compiling them from source, which
// was a fifth of a start's CPU profile (docs/startup-and-memory.md). Node checks each entry against
// the source, keeps it in the OS temp dir (NODE_COMPILE_CACHE names another, and
// NODE_DISABLE_COMPILE_CACHE=1 turns it off), and on older Node these are no-ops.
const node = nodeModule as Partial<Pick<typeof nodeModule, 'enableCompileCache' | 'flushCompileCache'>>

/** Call first thing, before the command loads its modules. */
export function enableCompileCache(): void {
  try {
    node.enableCompileCache?.()
  } catch {
    // A cache that cannot be set up (a read-only temp dir) only means compiling as before.
  }
}

/**
 * Writes what was compiled so far, once the server serves: Node writes it otherwise only when the
 * process exits, and a server that is killed would never leave one for its next start.
 */
export function flushCompileCache(): void {
  try {
    node.flushCompileCache?.()
  } catch {
    // as above
  }
  // The bundled command's own cache (bundled-program.ts), which lives in the executable's copy of
  // this package: a global is what reaches it from the bundle.
  const hooks = globalThis as Record<symbol, (() => void) | undefined>
  hooks[writeCodeCacheHook]?.()
}

/** Set by the executable while it wants its bundle's code cache written (bundled-program.ts). */
export const writeCodeCacheHook = Symbol.for('slaw.writeCodeCache')
