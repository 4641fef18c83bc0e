import type { CostEvent } from '../records/governance.js'
import type { Agent, Issue, Project, Squad } from '../records.js'

/**
 * What the tower client keeps in storage, and the instance-wide reads it reports. Part of the
 * `Storage` contract (`storage.towerState`), in its own file like governance.ts.
 *
 * State is a small key/value map of JSON values: each key is written on its own, so the reporting
 * node's writes (cursor, versions) and an Operator's control written on another node never clobber
 * each other. Values may hold the instance's tower API key: implementations must not log them.
 */
export interface TowerStateRepository {
  /** Every stored key and its value. */
  getAll(): Promise<Record<string, unknown>>
  /** Inserts or replaces the given keys; other keys are left alone. */
  put(entries: Record<string, unknown>): Promise<void>
  remove(keys: string[]): Promise<void>
  /**
   * Takes the lease `name` for `holder`, or renews it, for `ttlMs`. True when `holder` holds it
   * afterwards: it was free, expired or already its own. One node at a time reports to the tower.
   */
  acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean>
  /** Gives the lease up when `holder` holds it. */
  releaseLease(name: string, holder: string): Promise<void>
  /** Instance-wide figures a heartbeat carries. Cents of cost events since the given instants. */
  figures(since: { dayStart: Date; monthStart: Date; month: string }): Promise<TowerFigures>
  /** Instance-wide counts a manifest carries. */
  manifestCounts(): Promise<TowerManifestCounts>
  /**
   * Month-to-date usage a fleet limit counts: cents of metered (`metered_api`) cost events and
   * tokens (input, cached input, output) of subscription-billed ones.
   */
  limitUsage(monthStart: Date): Promise<{ meteredCents: number; subscriptionTokens: number }>
  /** Current rows for a full resync, in id order, after `afterId` ('' for the first page). */
  scanSquads(afterId: string, limit: number): Promise<Squad[]>
  scanAgents(afterId: string, limit: number): Promise<Agent[]>
  scanProjects(afterId: string, limit: number): Promise<Project[]>
  scanIssues(afterId: string, limit: number): Promise<Issue[]>
  scanCostEvents(afterId: string, limit: number): Promise<CostEvent[]>
}

export interface TowerFigures {
  squads: number
  /** Agents that are not terminated. */
  agents: number
  /** Heartbeat runs queued or running; 0 while this storage keeps no runs. */
  activeRuns: number
  /** Issues not `done` or `cancelled`. */
  openIssues: number
  todayCents: number
  monthCents: number
}

export interface TowerManifestCounts {
  squads: number
  agents: number
  projects: number
  issues: number
  costEvents: number
}
