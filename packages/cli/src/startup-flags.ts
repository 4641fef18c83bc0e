import { setFlagsFromString } from 'node:v8'

/**
 * Two V8 settings that differ while slaw starts, and are V8's own again once it serves, so that
 * an idle instance is small and a loaded one runs exactly as before (docs/startup-and-memory.md).
 * V8 reads both each time it uses them, so setting them at run time takes effect. A setting the
 * operator passed to node (a flag or NODE_OPTIONS) is left alone.
 *
 * - New space. V8's young generation starts at 1 MB per semi-space and doubles whenever most of a
 *   scavenge survives, up to 16 MB. Loading modules is exactly that, so by the time the server
 *   answers new space is 32 MB and, idle, stays so until V8's memory reducer runs, some 15 s
 *   later. With a growth factor of 1 while starting it stays at its initial size; under load it
 *   grows as before (`--max-semi-space-size` would cap it for good, and cost throughput).
 * - PGlite's WebAssembly. V8 recompiles a wasm function with TurboFan once it has run a while.
 *   PGlite's start-up runs some functions enough for that (about 200 of them): TurboFan's
 *   compilation memory, up to 23 MB for one function, on V8's worker threads, stays with the
 *   process as malloc arenas. A budget a hundred times larger while starting leaves a handful;
 *   the functions a workload uses still reach TurboFan within its first moments.
 */
const operatorSet = (name: string) => [...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((arg) => arg.replace(/_/g, '-').includes(name))

interface HeldFlag {
  name: string
  whileStarting: number
  /** V8's default, to go back to; undefined when this V8's default is not known (then left alone). */
  v8Default: number | undefined
}

const v8Major = Number(process.versions.v8.split('.')[0])

const held: HeldFlag[] = [
  { name: 'semi-space-growth-factor', whileStarting: 1, v8Default: 2 },
  // The default changed across V8 versions; Node 20's V8 11 has 1,800,000.
  { name: 'wasm-tiering-budget', whileStarting: 180_000_000, v8Default: v8Major === 11 ? 1_800_000 : undefined },
].filter((flag) => flag.v8Default !== undefined && !operatorSet(flag.name))

/** Call first thing, before the command loads its modules. */
export function holdStartupFlags(): void {
  for (const flag of held) setFlagsFromString(`--${flag.name}=${flag.whileStarting}`)
}

/** Call once the server is serving: V8's defaults again. */
export function releaseStartupFlags(): void {
  for (const flag of held) setFlagsFromString(`--${flag.name}=${flag.v8Default}`)
}
