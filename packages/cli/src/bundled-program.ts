import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import Module, { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { debuglog } from 'node:util'
import { Script } from 'node:vm'
import { writeCodeCacheHook } from './compile-cache.js'

/**
 * The built `slaw` command is one bundled file (scripts/bundle.mjs) run with a V8 code cache: a
 * start then neither resolves and reads ~900 module files nor compiles their sources, which was
 * two thirds of a start's module loading (docs/startup-and-memory.md). Node's own compile cache
 * (22.1+) covers files Node loads, not a script compiled here, so this keeps one for the bundle:
 * written once the server serves (or when a short command exits), read at the next start. V8
 * refuses a cache made by another V8, other flags or another source, and the cache's name carries
 * the bundle's id, so a stale or foreign one only means compiling as before.
 *
 * `NODE_DEBUG=slaw` prints whether the cache was used; `NODE_DISABLE_COMPILE_CACHE=1` turns it
 * off and `NODE_COMPILE_CACHE=<dir>` moves it, as for Node's own cache; `SLAW_UNBUNDLED=1` runs
 * the package's modules instead of the bundle.
 */
const bundleFileName = 'slaw.bundle.cjs'
/** The last line of the bundle: `//# slawBundleId=<sha256 of what precedes it>`. */
const bundleIdMarker = '//# slawBundleId='

const debug = debuglog('slaw')

type Wrapper = (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void

/** Runs the bundle next to this file with `argv`; false when there is none (then the caller loads the modules). */
export function runBundledProgram(argv: string[], dir = dirname(fileURLToPath(import.meta.url))): boolean {
  if (process.env.SLAW_UNBUNDLED === '1') return false
  const file = join(dir, bundleFileName)
  let source: string
  try {
    // The build keeps the bundle Latin-1 only, so V8 holds it one byte per character.
    source = readFileSync(file, 'latin1')
  } catch {
    return false
  }
  const cacheFile = codeCacheFile(source)
  const cachedData = cacheFile === undefined ? undefined : readIfPresent(cacheFile)
  const script = new Script(Module.wrap(source), { filename: file, cachedData })
  debug('code cache %s (%s)', cachedData === undefined ? 'none' : script.cachedDataRejected ? 'rejected' : 'accepted', cacheFile ?? 'disabled')
  if (cacheFile !== undefined && (cachedData === undefined || script.cachedDataRejected)) wantCodeCache(() => script.createCachedData(), cacheFile)
  const module = { exports: {} as { run?: (argv: string[]) => void } }
  ;(script.runInThisContext() as Wrapper)(module.exports, createRequire(file), module, file, dir)
  if (typeof module.exports.run !== 'function') throw new Error(`${file} is not a slaw bundle: rebuild the package`)
  module.exports.run(argv)
  return true
}

/** Where this bundle's cache lives for this Node, or undefined when caching is off or the place is not safe. */
function codeCacheFile(source: string): string | undefined {
  if (process.env.NODE_DISABLE_COMPILE_CACHE) return undefined
  const at = source.lastIndexOf(bundleIdMarker)
  if (at < 0) return undefined
  const id = source
    .slice(at + bundleIdMarker.length)
    .trim()
    .slice(0, 32)
  if (!/^[0-9a-f]{32}$/.test(id)) return undefined
  const dir = join(process.env.NODE_COMPILE_CACHE || join(tmpdir(), 'node-compile-cache'), 'slaw')
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    // Code read from here runs as this user: only a directory of ours that nobody else can write to.
    const stat = statSync(dir)
    if ((process.getuid && stat.uid !== process.getuid()) || (stat.mode & 0o022) !== 0) return undefined
  } catch {
    return undefined
  }
  return join(dir, `${id}-${process.version}-${process.arch}.v8`)
}

function readIfPresent(file: string): Buffer | undefined {
  try {
    return readFileSync(file)
  } catch {
    return undefined
  }
}

/** Writes the cache once: when the server serves (the hook), or when a command that never serves exits. */
function wantCodeCache(create: () => Buffer, file: string): void {
  const hooks = globalThis as Record<symbol, (() => void) | undefined>
  const write = () => {
    hooks[writeCodeCacheHook] = undefined
    process.off('exit', write)
    try {
      const temp = `${file}.${process.pid}.tmp`
      writeFileSync(temp, create(), { mode: 0o600 })
      renameSync(temp, file)
      debug('code cache written (%s)', file)
    } catch {
      // A cache that cannot be written only means compiling again at the next start.
    }
  }
  hooks[writeCodeCacheHook] = write
  process.once('exit', write)
}
