import { setFlagsFromString } from 'node:v8'

/**
 * V8's young generation (new space) starts at 1 MB per semi-space and doubles whenever many
 * objects survive a scavenge, up to 16 MB. Loading slaw's modules is exactly that (nearly
 * everything survives), so by the time the server answers, new space is 32 MB and, idle, stays so
 * until V8's memory reducer runs, some 15 s later: a fifth of the idle process on PostgreSQL.
 *
 * So the growth factor is 1 while slaw starts (new space stays at its initial size) and back to
 * V8's default once it serves: under load new space grows as before, so request throughput is
 * unchanged (`--max-semi-space-size` would cap it for good). V8 reads this flag each time it
 * would grow new space, so setting it at run time takes effect. An operator who set a semi-space
 * flag of their own keeps it.
 */
const ownSetting = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((arg) => arg.includes('semi-space') || arg.includes('semi_space'))

/** V8's default growth factor (`--semi-space-growth-factor`). */
const defaultGrowthFactor = 2

/** Keeps new space at its initial size; call first thing, before modules load. */
export function holdYoungGeneration(): void {
  if (!ownSetting) setFlagsFromString('--semi-space-growth-factor=1')
}

/** Lets new space grow again as V8 would; call once the server is serving. */
export function releaseYoungGeneration(): void {
  if (!ownSetting) setFlagsFromString(`--semi-space-growth-factor=${defaultGrowthFactor}`)
}
