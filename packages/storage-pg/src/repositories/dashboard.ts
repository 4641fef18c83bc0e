import { sql, type Kysely } from 'kysely'
import type { DashboardCounts, DashboardRepository, Period } from '@slaw/core'
import type { Database } from '../schema.js'

const totals = ['costCents', 'inputTokens', 'cachedInputTokens', 'outputTokens', 'subscriptionTokens', 'events', 'cacheWriteTokens', 'unpricedTokens'] as const

export class PgDashboardRepository implements DashboardRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async counts(squadId: string, input: { period: Period; incidentPeriods: Period[] }): Promise<DashboardCounts> {
    const periods = input.incidentPeriods.length ? input.incidentPeriods : ['']
    // One round trip over counters and small per-squad tables: issue counts come from
    // issue_status_counts (at most 7 statuses x 16 shards per squad, kept by triggers), spend from
    // the month rollup. Status lists come back as [status, count] pairs: JSON object keys would be
    // renamed by the CamelCasePlugin (in_progress -> inProgress).
    const { rows } = await sql<Record<string, unknown>>`
      select
        (select coalesce(json_agg(json_build_array(status, n)), '[]')
           from (select status, sum(n)::int8 as n from issue_status_counts where squad_id = ${squadId} group by status) c) as "issueCounts",
        (select coalesce(json_agg(json_build_array(state, n)), '[]')
           from (select state, count(*) as n from (
             -- Operational states come from runs: a run in flight makes an active agent running,
             -- a last finished run that failed or timed out makes it error (docs/governance.md).
             select case
                      when a.status not in ('active', 'idle') then a.status
                      when exists (select 1 from heartbeat_runs r where r.squad_id = a.squad_id and r.agent_id = a.id and r.status = 'running') then 'running'
                      when (select r.status from heartbeat_runs r
                             where r.squad_id = a.squad_id and r.agent_id = a.id and r.status not in ('queued', 'running')
                             order by r.id desc limit 1) in ('failed', 'timed_out') then 'error'
                      else a.status end as state
               from agents a where a.squad_id = ${squadId}) s group by state) c) as "agentCounts",
        (select count(*) from agents where squad_id = ${squadId} and status = 'paused' and pause_reason = 'budget') as "budgetPausedAgents",
        (select count(*) from projects where squad_id = ${squadId} and pause_reason = 'budget') as "budgetPausedProjects",
        (select count(*) from approvals where squad_id = ${squadId} and status = 'pending') as "pendingApprovals",
        (select count(*) from approvals where squad_id = ${squadId} and status = 'pending' and type = 'hire_agent') as "pendingHires",
        (select count(*) from (
           select distinct scope_type, scope_id, metric from budget_incidents i
            where i.squad_id = ${squadId} and i.period in (${sql.join(periods)}) and i.resolved_at is null
              and (i.scope_type = 'squad'
                   or (i.scope_type = 'agent' and exists (select 1 from agents a where a.id = i.scope_id))
                   or (i.scope_type = 'project' and exists (select 1 from projects p where p.id = i.scope_id)))) o) as "openIncidentBudgets",
        coalesce(r.cost_cents, 0) as "costCents", coalesce(r.input_tokens, 0) as "inputTokens", coalesce(r.cached_input_tokens, 0) as "cachedInputTokens",
        coalesce(r.output_tokens, 0) as "outputTokens", coalesce(r.subscription_tokens, 0) as "subscriptionTokens", coalesce(r.events, 0) as "events",
        coalesce(r.cache_write_tokens, 0) as "cacheWriteTokens", coalesce(r.unpriced_tokens, 0) as "unpricedTokens"
      from (select 1) one
      left join cost_rollups r on r.squad_id = ${squadId} and r.period = ${input.period} and r.scope = 'squad' and r.scope_key = ''`.execute(this.db())
    const r = rows[0] ?? {}
    const pairs = (v: unknown) => Object.fromEntries(((typeof v === 'string' ? JSON.parse(v) : v ?? []) as Array<[string, number]>).map(([k, n]) => [k, Number(n)]))
    return {
      issues: pairs(r.issueCounts),
      agents: pairs(r.agentCounts),
      budgetPausedAgents: Number(r.budgetPausedAgents ?? 0),
      budgetPausedProjects: Number(r.budgetPausedProjects ?? 0),
      spend: Object.fromEntries(totals.map((f) => [f, Number(r[f] ?? 0)])) as unknown as DashboardCounts['spend'],
      pendingApprovals: Number(r.pendingApprovals ?? 0),
      pendingHires: Number(r.pendingHires ?? 0),
      openIncidentBudgets: Number(r.openIncidentBudgets ?? 0),
    }
  }

  async runsPerDay(squadId: string, since: Date): Promise<Array<{ date: string; status: string; count: number }> | null> {
    // The day rollup the run repository keeps (append-only deltas, folded daily): one index range.
    const { rows } = await sql<{ date: string; status: string; count: string | number }>`
      select to_char(day, 'YYYY-MM-DD') as date, status, sum(runs) as count
        from heartbeat_run_days
       where squad_id = ${squadId} and day >= (${since}::timestamptz at time zone 'UTC')::date
       group by day, status having sum(runs) > 0`.execute(this.db())
    return rows.map((r) => ({ date: r.date, status: r.status, count: Number(r.count) }))
  }
}
