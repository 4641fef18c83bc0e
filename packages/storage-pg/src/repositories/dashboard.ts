import { sql, type Kysely } from 'kysely'
import type { DashboardCounts, DashboardRepository, MetricFigures, Period } from '@slaw/core'
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
    const pairs = (v: unknown) => Object.fromEntries(((typeof v === 'string' ? JSON.parse(v) : (v ?? [])) as Array<[string, number]>).map(([k, n]) => [k, Number(n)]))
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

  async metricFigures(input: { period: Period; maxSquads: number }): Promise<MetricFigures> {
    const max = Math.max(0, Math.floor(input.maxSquads))
    // One round trip. Runs in flight through the partial indexes on queued and running runs (a
    // handful of rows: caps bound them); spend from the month rollup's squad row of each squad (a
    // primary-key probe per squad); pending approvals counted per squad on (squad_id, status, type),
    // so neither grows with the months or the approvals decided. Lists come back as JSON arrays:
    // object keys would be camel-cased.
    const { rows } = await sql<Record<string, unknown>>`
      with spend as (
        select r.squad_id, s.name, r.cost_cents, r.input_tokens, r.cached_input_tokens, r.output_tokens,
               r.subscription_tokens, r.events, r.cache_write_tokens, r.unpriced_tokens
          from squads s join cost_rollups r on r.squad_id = s.id and r.period = ${input.period} and r.scope = 'squad' and r.scope_key = ''),
      pending as (
        select s.id as squad_id, s.name, p.n
          from squads s cross join lateral (select count(*) as n from approvals a where a.squad_id = s.id and a.status = 'pending') p
         where p.n > 0)
      select
        (select coalesce(json_agg(json_build_array(status, adapter_type, n)), '[]') from (
           select r.status, coalesce(a.adapter_type, 'unknown') as adapter_type, count(*) as n
             from (select agent_id, status from heartbeat_runs where status = 'queued'
                   union all select agent_id, status from heartbeat_runs where status = 'running') r
             left join agents a on a.id = r.agent_id
            group by r.status, a.adapter_type) x) as "runs",
        (select coalesce(json_agg(json_build_array(squad_id, name, cost_cents, input_tokens, cached_input_tokens, output_tokens,
                                                   subscription_tokens, events, cache_write_tokens, unpriced_tokens)), '[]') from (
           select * from spend order by cost_cents desc, input_tokens + output_tokens desc, squad_id limit ${max}) x) as "spend",
        (select count(*) from spend) as "spendSquads",
        (select coalesce(json_agg(json_build_array(squad_id, name, n)), '[]') from (
           select * from pending order by n desc, squad_id limit ${max}) x) as "approvals",
        (select count(*) from pending) as "approvalSquads"`.execute(this.db())
    const r = rows[0] ?? {}
    const list = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : (v ?? [])) as unknown[][]
    return {
      runsInFlight: list(r.runs).map(([status, adapterType, n]) => ({ status: status as 'queued' | 'running', adapterType: String(adapterType), count: Number(n) })),
      spend: list(r.spend).map(([squadId, name, ...f]) => ({
        squadId: String(squadId),
        name: String(name),
        ...(Object.fromEntries(totals.map((k, i) => [k, Number(f[i] ?? 0)])) as Record<(typeof totals)[number], number>),
      })),
      spendSquads: Number(r.spendSquads ?? 0),
      pendingApprovals: list(r.approvals).map(([squadId, name, n]) => ({ squadId: String(squadId), name: String(name), count: Number(n) })),
      approvalSquads: Number(r.approvalSquads ?? 0),
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
