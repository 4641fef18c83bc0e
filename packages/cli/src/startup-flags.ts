import { setFlagsFromString } from 'node:v8'

/**
 * A V8 setting that differs while slaw starts, and is V8's own again once it serves, so that an
 * idle instance is small and a loaded one runs as before (docs/startup-and-memory.md). V8 reads
 * it each time it uses it, so setting it at run time takes effect. A setting the operator passed
 * to node (a flag or NODE_OPTIONS) is left alone.
 *
 * New space: V8's young generation starts at 1 MB per semi-space and doubles whenever most of a
 * scavenge survives, up to 16 MB. Loading modules is exactly that, so by the time the server
 * answers new space is 32 MB and, idle, stays so until V8's memory reducer runs, some 15 s later.
 * With a growth factor of 1 while starting it stays at its initial size; under load it grows back
 * within seconds (`--max-semi-space-size` would cap it for good, and cost throughput).
 *
 * (A larger wasm tiering budget while starting also saved about 15 MB on PGlite, TurboFan's
 * compile memory for the ~200 functions PGlite's start-up makes hot, but V8 keeps a function's
 * first budget after the flag changes back, so PGlite stayed slower for the first seconds of
 * load: not done.)
 */
const operatorSet = (name: string) => [...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((arg) => arg.replace(/_/g, '-').includes(name))

interface HeldFlag {
  name: string
  whileStarting: number
  /** V8's default, to go back to. */
  v8Default: number
}

const held: HeldFlag[] = [{ name: 'semi-space-growth-factor', whileStarting: 1, v8Default: 2 }].filter((flag) => !operatorSet(flag.name))

/** Call first thing, before the command loads its modules. */
export function holdStartupFlags(): void {
  for (const flag of held) setFlagsFromString(`--${flag.name}=${flag.whileStarting}`)
}

/** Call once the server is serving: V8's defaults again. */
export function releaseStartupFlags(): void {
  for (const flag of held) setFlagsFromString(`--${flag.name}=${flag.v8Default}`)
}
