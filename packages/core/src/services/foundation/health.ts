import type { LockProvider } from '../../contracts/lock-provider.js'
import type { Storage } from '../../contracts/storage.js'
import type { TowerClient } from '../../contracts/tower-client.js'
import type { JobRunner } from '../runs/jobs.js'

interface PartHealth {
  status: 'ok' | 'degraded'
  /** Why a part is degraded (or, for `jobs` and `tower`, what it is doing); never a secret. */
  reason?: string
}

export interface HealthReport {
  storage: PartHealth
  locks: PartHealth
  tower: PartHealth
  jobs: PartHealth
}

export interface HealthSources {
  storage: Storage
  locks: LockProvider
  tower?: TowerClient | undefined
  /** Undefined when this node runs no jobs (`jobs: false`). */
  jobs?: Pick<JobRunner, 'health'> | undefined
  /** How long one probe may take before its part counts as degraded. Default 2 000 ms. */
  timeoutMs?: number
}

/** Tower states that are not a fault: reporting, or not asked to report. */
const calmTowerStates = new Set(['disabled', 'disconnected', 'connected'])

/**
 * Probes every part at once. Storage and locks are asked for a round trip, the tower client and
 * the job runner for their own view; a probe that throws or outlasts `timeoutMs` is `degraded`.
 */
export async function checkHealth(sources: HealthSources): Promise<HealthReport> {
  const timeoutMs = sources.timeoutMs ?? 2_000
  const [storage, locks, tower] = await Promise.all([
    probe(() => sources.storage.ping(), timeoutMs),
    sources.locks.ping ? probe(() => sources.locks.ping!(), timeoutMs) : Promise.resolve<PartHealth>({ status: 'ok' }),
    towerHealth(sources.tower, timeoutMs),
  ])
  const jobs: PartHealth = sources.jobs ? pick(sources.jobs.health()) : { status: 'ok', reason: 'this node runs no jobs' }
  return { storage, locks, tower, jobs }
}

async function towerHealth(tower: TowerClient | undefined, timeoutMs: number): Promise<PartHealth> {
  if (!tower?.status) return { status: 'ok', reason: 'no tower client' }
  let state: PartHealth = { status: 'ok' }
  const probed = await probe(async () => {
    const s = await tower.status!()
    state = calmTowerStates.has(s.state) ? { status: 'ok', reason: s.state } : { status: 'degraded', reason: s.lastError ? `${s.state}: ${s.lastError.code}` : s.state }
  }, timeoutMs)
  return probed.status === 'ok' ? state : probed
}

async function probe(fn: () => Promise<void>, timeoutMs: number): Promise<PartHealth> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<PartHealth>((resolve) => {
    timer = setTimeout(() => resolve({ status: 'degraded', reason: `no answer within ${timeoutMs} ms` }), timeoutMs)
    timer.unref()
  })
  try {
    return await Promise.race([fn().then((): PartHealth => ({ status: 'ok' })), timeout])
  } catch (err) {
    return { status: 'degraded', reason: err instanceof Error ? err.message.split('\n')[0]! : String(err) }
  } finally {
    clearTimeout(timer)
  }
}

const pick = (h: { status: 'ok' | 'degraded'; reason?: string }): PartHealth => (h.reason ? { status: h.status, reason: h.reason } : { status: h.status })
