import { sql, type Kysely } from 'kysely'
import type { DashboardRepository } from '@slaw/core'
import type { Database } from '../schema.js'

export class PgDashboardRepository implements DashboardRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async issueStatusCounts(squadId: string): Promise<Record<string, number>> {
    // At most 7 statuses x 16 shards rows per squad (migration 0002), whatever the number of issues.
    const { rows } = await sql<{ status: string; n: number }>`
      select status, sum(n)::int8 as n from issue_status_counts where squad_id = ${squadId} group by status`.execute(this.db())
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]))
  }

  async agentStatusCounts(squadId: string): Promise<{ byStatus: Record<string, number>; budgetPaused: number }> {
    const { rows } = await sql<{ status: string; n: number; budget: number }>`
      select status, count(*) as n, count(*) filter (where status = 'paused' and pause_reason = 'budget') as budget
        from agents where squad_id = ${squadId} group by status`.execute(this.db())
    return {
      byStatus: Object.fromEntries(rows.map((r) => [r.status, Number(r.n)])),
      budgetPaused: rows.reduce((sum, r) => sum + Number(r.budget), 0),
    }
  }

  async runsPerDay(_squadId: string, _since: Date): Promise<Array<{ date: string; status: string; count: number }> | null> {
    // Heartbeat runs are not stored yet; they arrive with the heartbeat feature.
    return null
  }
}
