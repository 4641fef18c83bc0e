import { sql, type Kysely, type Selectable } from 'kysely'
import type { BudgetCheckState, BudgetIncident, BudgetLevel, BudgetMetric, BudgetOverviewRows, BudgetRepository, BudgetScopeType, CostTotals, NewBudgetIncident, Period } from '@slaw/core'
import type { Database } from '../schema.js'
import type { BudgetIncidentsTable } from '../schema-governance.js'
import { now } from '../sql-helpers.js'

const fields = ['costCents', 'inputTokens', 'cachedInputTokens', 'outputTokens', 'subscriptionTokens', 'events', 'cacheWriteTokens', 'unpricedTokens'] as const
const columnOf: Record<(typeof fields)[number], string> = {
  costCents: 'cost_cents',
  inputTokens: 'input_tokens',
  cachedInputTokens: 'cached_input_tokens',
  outputTokens: 'output_tokens',
  subscriptionTokens: 'subscription_tokens',
  events: 'events',
  cacheWriteTokens: 'cache_write_tokens',
  unpricedTokens: 'unpriced_tokens',
}
const cap = (s: string) => s[0]!.toUpperCase() + s.slice(1)

/** Rollup columns of one joined alias, named `<alias>CostCents` and so on (no underscores: the CamelCasePlugin keeps them). */
const totalsColumns = (alias: string) => sql.raw(fields.map((f) => `coalesce(${alias}.${columnOf[f]}, 0) as "${alias}${cap(f)}"`).join(', '))
const totalsOf = (r: Record<string, unknown>, alias: string): CostTotals => Object.fromEntries(fields.map((f) => [f, Number(r[`${alias}${cap(f)}`] ?? 0)])) as unknown as CostTotals

/** An incident of a deleted agent or project is over: only scopes that still exist count. */
const scopeExists = sql`(i.scope_type = 'squad'
  or (i.scope_type = 'agent' and exists (select 1 from agents a where a.id = i.scope_id))
  or (i.scope_type = 'project' and exists (select 1 from projects p where p.id = i.scope_id)))`

export class PgBudgetRepository implements BudgetRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async overview(squadId: string, input: { period: Period; incidentPeriods: Period[] }): Promise<BudgetOverviewRows> {
    const { period, incidentPeriods } = input
    const spent = (alias: string) => sql.raw(fields.map((f) => `'${f}', coalesce(${alias}.${columnOf[f]}, 0)`).join(', '))
    // One round trip; nested rows come back as JSON with camelCase keys (nothing for the
    // CamelCasePlugin to rename) and are typed below.
    const { rows } = await sql<Record<string, unknown>>`
      select s.budget_monthly_tokens as "squadTokens", ${totalsColumns('rs')},
        (select coalesce(json_agg(json_build_object(
                  'id', a.id, 'name', a.name, 'status', a.status, 'pauseReason', a.pause_reason,
                  'budgetMonthlyCents', a.budget_monthly_cents, 'budgetMonthlyTokens', a.budget_monthly_tokens,
                  'spent', json_build_object(${spent('r')})) order by a.name), '[]')
           from agents a
           left join cost_rollups r on r.squad_id = a.squad_id and r.period = ${period} and r.scope = 'agent' and r.scope_key = a.id::text
          where a.squad_id = ${squadId}) as "agentRows",
        (select coalesce(json_agg(json_build_object(
                  'id', p.id, 'name', p.name, 'budgetCents', p.budget_cents, 'pausedAt', p.paused_at, 'pauseReason', p.pause_reason,
                  'spentCents', coalesce(r.cost_cents, 0)) order by p.id), '[]')
           from projects p
           left join cost_rollups r on r.squad_id = p.squad_id and r.period = 'all' and r.scope = 'project' and r.scope_key = p.id::text
          where p.squad_id = ${squadId}) as "projectRows",
        (select coalesce(json_agg(json_build_object(
                  'id', i.id, 'squadId', i.squad_id, 'scopeType', i.scope_type, 'scopeId', i.scope_id, 'metric', i.metric, 'level', i.level,
                  'period', i.period, 'limitAmount', i.limit_amount, 'observedAmount', i.observed_amount,
                  'createdAt', i.created_at, 'resolvedAt', i.resolved_at) order by i.created_at desc, i.id desc), '[]')
           from budget_incidents i
          where i.squad_id = ${squadId} and i.period in (${sql.join(incidentPeriods.length ? incidentPeriods : [''])}) and i.resolved_at is null and ${scopeExists}) as "incidentRows"
        from squads s
        left join cost_rollups rs on rs.squad_id = s.id and rs.period = ${period} and rs.scope = 'squad' and rs.scope_key = ''
       where s.id = ${squadId}`.execute(this.db())
    const r = rows[0] ?? {}
    const json = <T>(v: unknown): T[] => (typeof v === 'string' ? JSON.parse(v) : (v ?? [])) as T[]
    const date = (v: unknown) => (v == null ? null : new Date(v as string))
    return {
      squadTokens: r.squadTokens == null ? null : Number(r.squadTokens),
      squad: totalsOf(r, 'rs'),
      agents: json<BudgetOverviewRows['agents'][number]>(r.agentRows),
      projects: json<Record<string, unknown>>(r.projectRows).map((p) => ({ ...(p as unknown as BudgetOverviewRows['projects'][number]), pausedAt: date(p.pausedAt) })),
      incidents: json<Record<string, unknown>>(r.incidentRows).map((i) => ({ ...(i as unknown as BudgetIncident), createdAt: date(i.createdAt)!, resolvedAt: date(i.resolvedAt) })),
    }
  }

  async tokenLimits(squadId: string, agentId?: string): Promise<{ squad: number | null; agent: number | null }> {
    const { rows } = await sql<{ squad: number | null; agent: number | null }>`
      select (select budget_monthly_tokens from squads where id = ${squadId}) as squad,
             (select budget_monthly_tokens from agents where id = ${agentId ?? null}::uuid) as agent`.execute(this.db())
    return { squad: rows[0]?.squad ?? null, agent: rows[0]?.agent ?? null }
  }

  async setSquadTokens(squadId: string, tokens: number | null): Promise<void> {
    await this.db().updateTable('squads').set({ budgetMonthlyTokens: tokens, updatedAt: now() }).where('id', '=', squadId).execute()
  }

  async setAgentTokens(agentId: string, tokens: number | null): Promise<void> {
    await this.db().updateTable('agents').set({ budgetMonthlyTokens: tokens, updatedAt: now() }).where('id', '=', agentId).execute()
  }

  async checkState(input: { squadId: string; agentId: string; projectId: string | null; period: Period }): Promise<BudgetCheckState> {
    const { squadId, agentId, projectId, period } = input
    // Primary-key lookups only: three rollup rows, two ceilings and the project's budget.
    const { rows } = await sql<Record<string, unknown>>`
      select s.budget_monthly_tokens as "squadTokens", a.budget_monthly_tokens as "agentTokens", p.budget_cents as "projectBudgetCents",
             ${totalsColumns('rs')}, ${totalsColumns('ra')}, ${totalsColumns('rp')}
        from (select 1) one
        left join squads s on s.id = ${squadId}
        left join agents a on a.id = ${agentId}
        left join projects p on p.id = ${projectId}::uuid
        left join cost_rollups rs on rs.squad_id = ${squadId} and rs.period = ${period} and rs.scope = 'squad' and rs.scope_key = ''
        left join cost_rollups ra on ra.squad_id = ${squadId} and ra.period = ${period} and ra.scope = 'agent' and ra.scope_key = ${agentId}
        left join cost_rollups rp on rp.squad_id = ${squadId} and rp.period = 'all' and rp.scope = 'project' and rp.scope_key = ${projectId ?? ''}`.execute(this.db())
    const r = rows[0] ?? {}
    return {
      squadTokens: r.squadTokens == null ? null : Number(r.squadTokens),
      agentTokens: r.agentTokens == null ? null : Number(r.agentTokens),
      squad: totalsOf(r, 'rs'),
      agent: totalsOf(r, 'ra'),
      projectBudgetCents: r.projectBudgetCents == null ? null : Number(r.projectBudgetCents),
      project: totalsOf(r, 'rp'),
    }
  }

  async openIncident(i: NewBudgetIncident): Promise<BudgetIncident | undefined> {
    // The partial unique index budget_incidents_open makes a second open incident a no-op.
    const { rows } = await sql<Selectable<BudgetIncidentsTable>>`
      insert into budget_incidents (id, squad_id, scope_type, scope_id, metric, level, period, limit_amount, observed_amount)
      values (${i.id}, ${i.squadId}, ${i.scopeType}, ${i.scopeId}, ${i.metric}, ${i.level}, ${i.period}, ${i.limitAmount}, ${i.observedAmount})
      on conflict (scope_type, scope_id, metric, level, period) where resolved_at is null do nothing
      returning *`.execute(this.db())
    return rows[0]
  }

  async resolveIncidents(s: { scopeType: BudgetScopeType; scopeId: string; metric: BudgetMetric; period: Period; levels?: BudgetLevel[] }): Promise<number> {
    let q = this.db()
      .updateTable('budgetIncidents')
      .set({ resolvedAt: now() })
      .where('scopeType', '=', s.scopeType)
      .where('scopeId', '=', s.scopeId)
      .where('metric', '=', s.metric)
      .where('period', '=', s.period)
      .where('resolvedAt', 'is', null)
    if (s.levels) {
      if (!s.levels.length) return 0
      q = q.where('level', 'in', s.levels)
    }
    const r = await q.executeTakeFirst()
    return Number(r.numUpdatedRows)
  }
}
