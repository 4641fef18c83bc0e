import { sql, type Kysely } from 'kysely'
import type { Agent, AgentPatch, AgentRepository, NewAgent } from '@slaw/core'
import type { Database, Row } from '../schema.js'
import { guardUnique, json, now } from '../sql-helpers.js'

/** Fields are listed, not spread: the webhook secret (and any column added later) stays in storage. */
export const toAgent = (r: Row<'agents'>): Agent => ({
  id: r.id,
  squadId: r.squadId,
  name: r.name,
  role: r.role,
  title: r.title,
  status: r.status,
  adapterType: r.adapterType,
  reportsToAgentId: r.reportsToAgentId,
  prompt: r.prompt,
  desiredSkills: r.desiredSkills,
  permissions: r.permissions,
  instructionsPath: r.instructionsPath,
  runtimeState: r.runtimeState,
  budgetMonthlyCents: r.budgetMonthlyCents,
  pauseReason: r.pauseReason,
  adapterConfig: r.adapterConfig ?? {},
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
})

export class PgAgentRepository implements AgentRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(a: NewAgent): Promise<Agent> {
    const row = await guardUnique(
      this.db()
        .insertInto('agents')
        .values({
          id: a.id,
          squadId: a.squadId,
          name: a.name,
          role: a.role,
          title: a.title,
          adapterType: a.adapterType,
          reportsToAgentId: a.reportsToAgentId,
          prompt: a.prompt,
          desiredSkills: json(a.desiredSkills),
          permissions: json({}),
          runtimeState: json({}),
          adapterConfig: json(a.adapterConfig ?? {}),
        })
        .returningAll()
        .executeTakeFirstOrThrow(),
    )
    return toAgent(row)
  }

  async get(id: string): Promise<Agent | undefined> {
    const row = await this.db().selectFrom('agents').selectAll().where('id', '=', id).executeTakeFirst()
    return row && toAgent(row)
  }

  async list(squadId: string): Promise<Agent[]> {
    return (await this.db().selectFrom('agents').selectAll().where('squadId', '=', squadId).orderBy('name').execute()).map(toAgent)
  }

  async update(id: string, patch: AgentPatch, opts: { whenStatus?: Agent['status'][] } = {}): Promise<Agent | undefined> {
    const { permissions, runtimeState, adapterConfig, ...plain } = patch
    let q = this.db()
      .updateTable('agents')
      .set({
        ...plain,
        ...(permissions !== undefined ? { permissions: json(permissions) } : {}),
        ...(runtimeState !== undefined ? { runtimeState: json(runtimeState) } : {}),
        ...(adapterConfig !== undefined ? { adapterConfig: json(adapterConfig) } : {}),
        updatedAt: now(),
      })
      .where('id', '=', id)
    if (opts.whenStatus) q = q.where('status', 'in', opts.whenStatus)
    const row = await guardUnique(q.returningAll().executeTakeFirst())
    return row && toAgent(row)
  }

  async setSession(id: string, key: string, session: Record<string, unknown> | null, onlyIfSessionId?: string): Promise<void> {
    // One statement on the agent's row: concurrent writers of different keys both land (each
    // re-reads the row it waited for), and a reset-session in between is never overwritten wholesale.
    if (session === null) {
      await sql`update agents set runtime_state = runtime_state #- array['sessions', ${key}]::text[], updated_at = now()
                 where id = ${id} and runtime_state -> 'sessions' ? ${key}
                   ${onlyIfSessionId !== undefined ? sql`and runtime_state -> 'sessions' -> ${key} ->> 'sessionId' = ${onlyIfSessionId}` : sql``}`.execute(this.db())
      return
    }
    await sql`update agents set runtime_state = coalesce(runtime_state, '{}'::jsonb)
                 || jsonb_build_object('sessions', coalesce(runtime_state -> 'sessions', '{}'::jsonb) || jsonb_build_object(${key}::text, ${json(session)})),
               updated_at = now()
               where id = ${id}`.execute(this.db())
  }

  async setStatusForSquad(squadId: string, status: Agent['status'], pauseReason: string | null): Promise<number> {
    const r = await this.db().updateTable('agents').set({ status, pauseReason, updatedAt: now() }).where('squadId', '=', squadId).where('status', '<>', 'terminated').executeTakeFirst()
    return Number(r.numUpdatedRows)
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db().deleteFrom('agents').where('id', '=', id).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }

  async chainOfCommand(id: string): Promise<Array<Pick<Agent, 'id' | 'name' | 'role'>>> {
    // Walk reports_to upwards; the depth cap guards against a cycle written by hand.
    const { rows } = await sql<{ id: string; name: string; role: string }>`
      with recursive chain(id, name, role, reports_to_agent_id, depth) as (
        select m.id, m.name, m.role, m.reports_to_agent_id, 1
          from agents a join agents m on m.id = a.reports_to_agent_id
         where a.id = ${id}
        union all
        select m.id, m.name, m.role, m.reports_to_agent_id, c.depth + 1
          from chain c join agents m on m.id = c.reports_to_agent_id
         where c.depth < 50
      )
      select id, name, role from chain order by depth`.execute(this.db())
    return rows
  }

  async webhookSecret(id: string): Promise<string | null> {
    const row = await this.db().selectFrom('agents').select('webhookSecret').where('id', '=', id).executeTakeFirst()
    return row?.webhookSecret ?? null
  }

  async setWebhookSecret(id: string, envelope: string | null): Promise<void> {
    await this.db().updateTable('agents').set({ webhookSecret: envelope }).where('id', '=', id).execute()
  }

  async findByNames(squadId: string, names: string[]): Promise<Agent[]> {
    if (!names.length) return []
    const lowered = [...new Set(names.map((n) => n.toLowerCase()))]
    const rows = await this.db().selectFrom('agents').selectAll().where('squadId', '=', squadId).where(sql<string>`lower(name)`, 'in', lowered).execute()
    return rows.map(toAgent)
  }
}
