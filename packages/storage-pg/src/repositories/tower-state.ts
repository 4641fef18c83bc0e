import { sql, type Kysely } from 'kysely'
import type { Agent, CostEvent, Issue, Project, Squad, TowerFigures, TowerManifestCounts, TowerStateRepository } from '@slaw/core'
import type { Database } from '../schema.js'
import { json } from '../sql-helpers.js'
import { toAgent } from './agents.js'
import { issueColumns } from './issues.js'
import { toSquad } from './squads.js'

const num = (v: unknown): number => Number(v ?? 0)

/** The tower client's state, its reporting lease, and the instance-wide reads it reports. */
export class PgTowerStateRepository implements TowerStateRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async getAll(): Promise<Record<string, unknown>> {
    const rows = await this.db().selectFrom('towerState').select(['key', 'value']).execute()
    return Object.fromEntries(rows.map((r) => [r.key, r.value]))
  }

  async put(entries: Record<string, unknown>): Promise<void> {
    const keys = Object.keys(entries)
    if (!keys.length) return
    await this.db()
      .insertInto('towerState')
      .values(keys.map((key) => ({ key, value: json(entries[key] ?? null) })))
      .onConflict((oc) => oc.column('key').doUpdateSet({ value: (eb) => eb.ref('excluded.value'), updatedAt: sql`now()` }))
      .execute()
  }

  async remove(keys: string[]): Promise<void> {
    if (!keys.length) return
    await this.db().deleteFrom('towerState').where('key', 'in', keys).execute()
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    // Insert, or take over when free, expired or already ours; the WHERE makes the check and the write one step.
    const row = await this.db()
      .insertInto('towerLeases')
      .values({ name, holder, expiresAt: sql`now() + ${ttlMs} * interval '1 millisecond'` })
      .onConflict((oc) =>
        oc
          .column('name')
          .doUpdateSet({ holder, expiresAt: sql`now() + ${ttlMs} * interval '1 millisecond'` })
          .where((eb) => eb.or([eb('towerLeases.holder', '=', holder), eb('towerLeases.expiresAt', '<', sql<Date>`now()`)])),
      )
      .returning('holder')
      .executeTakeFirst()
    return row?.holder === holder
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.db().deleteFrom('towerLeases').where('name', '=', name).where('holder', '=', holder).execute()
  }

  async figures(since: { dayStart: Date; monthStart: Date; month: string }): Promise<TowerFigures> {
    // Counters and rollups where they exist; today's spend is an index range scan per squad.
    const { rows } = await sql<Record<string, unknown>>`
      select
        (select count(*) from squads) as squads,
        (select count(*) from agents where status <> 'terminated') as agents,
        (select coalesce(sum(n), 0) from issue_status_counts where status not in ('done', 'cancelled')) as "openIssues",
        (select coalesce(sum(cost_cents), 0) from cost_rollups where period = ${since.month} and scope = 'squad' and scope_key = '') as "monthCents",
        (select coalesce(sum(t.c), 0) from squads s cross join lateral (
           select sum(e.cost_cents) as c from cost_events e where e.squad_id = s.id and e.occurred_at >= ${since.dayStart}
         ) t) as "todayCents"`.execute(this.db())
    const r = rows[0] ?? {}
    return { squads: num(r.squads), agents: num(r.agents), activeRuns: 0, openIssues: num(r.openIssues), todayCents: num(r.todayCents), monthCents: num(r.monthCents) }
  }

  async manifestCounts(): Promise<TowerManifestCounts> {
    const { rows } = await sql<Record<string, unknown>>`
      select (select count(*) from squads) as squads, (select count(*) from agents) as agents,
             (select count(*) from projects) as projects, (select count(*) from issues) as issues,
             (select count(*) from cost_events) as "costEvents"`.execute(this.db())
    const r = rows[0] ?? {}
    return { squads: num(r.squads), agents: num(r.agents), projects: num(r.projects), issues: num(r.issues), costEvents: num(r.costEvents) }
  }

  async limitUsage(monthStart: Date): Promise<{ meteredCents: number; subscriptionTokens: number }> {
    const { rows } = await sql<Record<string, unknown>>`
      select coalesce(sum(t.metered), 0) as "meteredCents", coalesce(sum(t.tokens), 0) as "subscriptionTokens"
        from squads s cross join lateral (
          select sum(e.cost_cents) filter (where e.billing_type = 'metered_api') as metered,
                 sum(e.input_tokens + e.cached_input_tokens + e.output_tokens) filter (where e.billing_type <> 'metered_api') as tokens
            from cost_events e where e.squad_id = s.id and e.occurred_at >= ${monthStart}
        ) t`.execute(this.db())
    const r = rows[0] ?? {}
    return { meteredCents: num(r.meteredCents), subscriptionTokens: num(r.subscriptionTokens) }
  }

  async scanSquads(afterId: string, limit: number): Promise<Squad[]> {
    let q = this.db().selectFrom('squads').selectAll().orderBy('id').limit(limit)
    if (afterId) q = q.where('id', '>', afterId)
    return (await q.execute()).map(toSquad)
  }

  async scanAgents(afterId: string, limit: number): Promise<Agent[]> {
    let q = this.db().selectFrom('agents').selectAll().orderBy('id').limit(limit)
    if (afterId) q = q.where('id', '>', afterId)
    return (await q.execute()).map(toAgent)
  }

  async scanProjects(afterId: string, limit: number): Promise<Project[]> {
    let q = this.db().selectFrom('projects').selectAll().orderBy('id').limit(limit)
    if (afterId) q = q.where('id', '>', afterId)
    return q.execute()
  }

  async scanIssues(afterId: string, limit: number): Promise<Issue[]> {
    let q = this.db()
      .selectFrom('issues')
      .select([...issueColumns])
      .orderBy('id')
      .limit(limit)
    if (afterId) q = q.where('id', '>', afterId)
    return q.execute()
  }

  async scanCostEvents(afterId: string, limit: number): Promise<CostEvent[]> {
    let q = this.db().selectFrom('costEvents').selectAll().orderBy('id').limit(limit)
    if (afterId) q = q.where('id', '>', afterId)
    return q.execute()
  }
}
