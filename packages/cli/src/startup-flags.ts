import { setFlagsFromString, getHeapSpaceStatistics } from 'node:v8'
import { PerformanceObserver } from 'node:perf_hooks'

/**
 * V8 settings that differ while slaw starts and once it serves, so that an idle instance is small
 * and a loaded one does not keep GC headroom it does not need (docs/startup-and-memory.md). V8
 * reads each of them every time it uses it, so setting them at run time takes effect
 * (`--max-semi-space-size` is read once, when the heap is made: set at run time it does nothing).
 * A setting the operator passed to node (a flag or NODE_OPTIONS) is left alone.
 *
 * New space: V8's young generation starts at 1 MB per semi-space and doubles whenever most of a
 * scavenge survives, up to 16 MB. Loading modules is exactly that, so by the time the server
 * answers new space is 32 MB and, idle, stays so until V8's memory reducer runs, some 15 s later.
 * With a growth factor of 1 while starting it stays at its initial size.
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

/**
 * Once serving, new space grows under load up to this many MB per semi-space (V8's own cap is 16).
 * After a burst of requests nearly all of a 32 MB new space is empty headroom (a scavenge keeps
 * only the requests in flight), and V8 keeps it until its memory reducer runs.
 */
const semiSpaceCapMb = 8
/**
 * Old space: after a full GC, V8 lets the old generation grow to this much more than what survived
 * (1 + N/100 times it) before the next. V8's own factor goes up to 4× when GC is fast next to the
 * program, and a server's live heap is small (~30 MB after load) while requests promote garbage
 * steadily: old space then held up to 50 MB of garbage after a burst of requests.
 */
const heapGrowingPercent = 50

/** Call first thing, before the command loads its modules. */
export function holdStartupFlags(): void {
  for (const flag of held) setFlagsFromString(`--${flag.name}=${flag.whileStarting}`)
}

/**
 * Call once the server is serving: V8's own settings again, or, with `SVC_GC_HEADROOM=low`, the
 * smaller headroom above. Not the default: measured side by side on PostgreSQL it cost a fifth to
 * two fifths of the request throughput (more scavenges and full GCs) for 121 instead of 139–196 MB
 * after load (docs/startup-and-memory.md, "Memory after load").
 */
export function releaseStartupFlags(env: NodeJS.ProcessEnv = process.env): void {
  for (const flag of held) setFlagsFromString(`--${flag.name}=${flag.v8Default}`)
  if (env.SVC_GC_HEADROOM !== 'low') return
  if (!operatorSet('heap-growing-percent')) setFlagsFromString(`--heap-growing-percent=${heapGrowingPercent}`)
  if (!operatorSet('semi-space')) capNewSpace(semiSpaceCapMb)
}

let capping: PerformanceObserver | undefined

/**
 * Keeps new space at most `capMb` per semi-space: V8 grows it (by the growth factor) only after a
 * scavenge, so after each GC the growth factor is 1 once new space has reached the cap and V8's
 * 2 again below it (the memory reducer shrinks it when the process goes idle, and it grows back
 * under load). `--max-semi-space-size` would do the same, but only on node's command line.
 */
function capNewSpace(capMb: number): void {
  if (capping) return
  const cap = 2 * capMb * 2 ** 20
  let growing = true
  capping = new PerformanceObserver(() => {
    const size = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0
    if (size >= cap === growing) {
      growing = !growing
      setFlagsFromString(`--semi-space-growth-factor=${growing ? 2 : 1}`)
    }
  })
  capping.observe({ entryTypes: ['gc'] })
}
