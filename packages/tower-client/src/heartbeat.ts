import type { HeartbeatRequest, HeartbeatResponse } from '@slaw/core/ingest'
import type { IngestHttp } from './http.js'
import { dayStart, monthOf } from './limits.js'
import type { Reporter } from './reporter.js'
import { padCursor } from './wire.js'

/** What the heartbeat says of the instance's health. */
export interface Health {
  startedAt: number
  /** The last sync failed for a reason other than reachability. */
  degraded: boolean
}

/**
 * POST /heartbeat: liveness, counts and spend, the cursor and the versions applied. Resolves to the
 * directives of the answer; the time of the heartbeat is recorded for GET /api/tower.
 */
export async function sendHeartbeat(r: Reporter, http: IngestHttp, apiKey: string, health: Health): Promise<unknown> {
  const { ctx, store, options } = r
  const now = new Date()
  const month = monthOf(now)
  const f = await ctx.storage.towerState.figures({ dayStart: dayStart(now), monthStart: month.start, month: month.key })
  const hook = ctx.skills()
  const appliedCatalog = hook ? await hook.appliedCatalogVersion() : undefined
  const body: HeartbeatRequest = {
    protocolVersion: options.protocolVersion,
    sentAt: now.toISOString(),
    status: health.degraded ? 'degraded' : 'ok',
    uptimeSec: Math.floor((Date.now() - health.startedAt) / 1000),
    counts: { squads: f.squads, agents: f.agents, activeRuns: f.activeRuns, openIssues: f.openIssues },
    spend: { todayCents: f.todayCents, monthCents: f.monthCents },
    lastEventCursor: store.data.cursor !== undefined ? padCursor(store.data.cursor) : null,
    appliedLimitVersion: store.data.limit?.version ?? 0,
    ...(hook ? { appliedSkillCatalogVersion: appliedCatalog ?? 0 } : {}),
  }
  const res = await http.post<HeartbeatResponse>('/heartbeat', body, { apiKey, signal: r.signal })
  await store.save({ report: { ...store.report(), lastHeartbeatAt: new Date().toISOString() } })
  return res.body.directives
}
