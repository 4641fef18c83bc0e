import { sql, type Kysely, type Selectable } from 'kysely'
import type { BudgetCheckState, BudgetIncident, BudgetLevel, BudgetMetric, BudgetRepository, BudgetScopeType, CostTotals, NewBudgetIncident, Period } from '@slaw/core'
import type { Database } from '../schema.js'
import type { BudgetIncidentsTable } from '../schema-governance.js'
import { now } from '../sql-helpers.js'

const toIncident = (r: Selectable<BudgetIncidentsTable>): BudgetIncident => ({
  ...r,
  scopeType: r.scopeType as BudgetScopeType,
  metric: r.metric as BudgetMetric,
  level: r.level as BudgetLevel,
})

const fields = ['costCents', 'inputTokens', 'cachedInputTokens', 'outputTokens', 'subscriptionTokens', 'events'] as const
const columnOf: Record<(typeof fields)[number], string> = {
  costCents: 'cost_cents',
  inputTokens: 'input_tokens',
  cachedInputTokens: 'cached_input_tokens',
  outputTokens: 'output_tokens',
  subscriptionTokens: 'subscription_tokens',
  events: 'events',
}
const cap = (s: string) => s[0]!.toUpperCase() + s.slice(1)

/** Rollup columns of one joined alias, named `<alias>CostCents` and so on (no underscores: the CamelCasePlugin keeps them). */
const totalsColumns = (alias: string) => sql.raw(fields.map((f) => `coalesce(${alias}.${columnOf[f]}, 0) as "${alias}${cap(f)}"`).join(', '))
const totalsOf = (r: Record<string, unknown>, alias: string): CostTotals =>
  Object.fromEntries(fields.map((f) => [f, Number(r[`${alias}${cap(f)}`] ?? 0)])) as unknown as CostTotals

/** An incident of a deleted agent or project is over: only scopes that still exist count. */
const scopeExists = sql`(i.scope_type = 'squad'
  or (i.scope_type = 'agent' and exists (select 1 from agents a where a.id = i.scope_id))
  or (i.scope_type = 'project' and exists (select 1 from projects p where p.id = i.scope_id)))`

export class PgBudgetRepository implements BudgetRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async tokenLimits(squadId: string, agentId?: string): Promise<{ squad: number | null; agent: number | null }> {
    const { rows } = await sql<{ squad: number | null; agent: number | null }>`
      select (select budget_monthly_tokens from squads where id = ${squadId}) as squad,
             (select budget_monthly_tokens from agents where id = ${agentId ?? null}::uuid) as agent`.execute(this.db())
    return { squad: rows[0]?.squad ?? null, agent: rows[0]?.agent ?? null }
  }

  async agentTokenLimits(squadId: string): Promise<Map<string, number>> {
    const rows = await this.db().selectFrom('agents').select(['id', 'budgetMonthlyTokens']).where('squadId', '=', squadId).where('budgetMonthlyTokens', 'is not', null).execute()
    return new Map(rows.map((r) => [r.id, Number(r.budgetMonthlyTokens)]))
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
    return rows[0] && toIncident(rows[0])
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

  async openIncidents(squadId: string, periods: Period[]): Promise<BudgetIncident[]> {
    if (!periods.length) return []
    const { rows } = await sql<Selectable<BudgetIncidentsTable>>`
      select * from budget_incidents i
       where squad_id = ${squadId} and period in (${sql.join(periods)}) and resolved_at is null and ${scopeExists}
       order by created_at desc, id desc`.execute(this.db())
    return rows.map(toIncident)
  }

  async countOpenIncidentBudgets(squadId: string, periods: Period[]): Promise<number> {
    if (!periods.length) return 0
    const { rows } = await sql<{ n: number }>`
      select count(*) as n from (
        select distinct scope_type, scope_id, metric from budget_incidents i
         where squad_id = ${squadId} and period in (${sql.join(periods)}) and resolved_at is null and ${scopeExists}) open`.execute(this.db())
    return Number(rows[0]?.n ?? 0)
  }
}
