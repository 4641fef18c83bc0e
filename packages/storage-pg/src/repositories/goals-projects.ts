import { sql, type Kysely } from 'kysely'
import type { Goal, GoalPatch, GoalRepository, NewGoal, NewProject, Project, ProjectPatch, ProjectRepository } from '@slaw/core'
import type { Database, Row } from '../schema.js'
import { now } from '../sql-helpers.js'

export const toGoal = (r: Row<'goals'>): Goal => ({ ...r, status: r.status as Goal['status'] })
export const toProject = (r: Row<'projects'>): Project => ({ ...r, pauseReason: r.pauseReason as Project['pauseReason'] })

export class PgGoalRepository implements GoalRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(g: NewGoal): Promise<Goal> {
    return toGoal(await this.db().insertInto('goals').values(g).returningAll().executeTakeFirstOrThrow())
  }

  async get(id: string): Promise<Goal | undefined> {
    const row = await this.db().selectFrom('goals').selectAll().where('id', '=', id).executeTakeFirst()
    return row && toGoal(row)
  }

  async list(squadId: string, page: { limit: number; offset?: number }): Promise<Goal[]> {
    // Ids are UUIDv7, so id order is creation order (index goals_squad).
    const rows = await this.db().selectFrom('goals').selectAll().where('squadId', '=', squadId).orderBy('id').limit(page.limit).offset(page.offset ?? 0).execute()
    return rows.map(toGoal)
  }

  async update(id: string, patch: GoalPatch): Promise<Goal | undefined> {
    const row = await this.db().updateTable('goals').set({ ...patch, updatedAt: now() }).where('id', '=', id).returningAll().executeTakeFirst()
    return row && toGoal(row)
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db().deleteFrom('goals').where('id', '=', id).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }
}

export class PgProjectRepository implements ProjectRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(p: NewProject): Promise<Project> {
    return toProject(await this.db().insertInto('projects').values(p).returningAll().executeTakeFirstOrThrow())
  }

  async get(id: string, opts: { forShare?: boolean } = {}): Promise<Project | undefined> {
    let q = this.db().selectFrom('projects').selectAll().where('id', '=', id)
    if (opts.forShare) q = q.forShare()
    const row = await q.executeTakeFirst()
    return row && toProject(row)
  }

  async list(squadId: string, page: { limit: number; offset?: number }): Promise<Project[]> {
    const rows = await this.db().selectFrom('projects').selectAll().where('squadId', '=', squadId).orderBy('id').limit(page.limit).offset(page.offset ?? 0).execute()
    return rows.map(toProject)
  }

  async update(id: string, patch: ProjectPatch): Promise<Project | undefined> {
    const row = await this.db().updateTable('projects').set({ ...patch, updatedAt: now() }).where('id', '=', id).returningAll().executeTakeFirst()
    return row && toProject(row)
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db().deleteFrom('projects').where('id', '=', id).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }

  async countPaused(squadId: string, reason: NonNullable<Project['pauseReason']>): Promise<number> {
    // A squad has few projects; the projects_squad index narrows to them.
    const { rows } = await sql<{ n: number }>`select count(*)::int8 as n from projects where squad_id = ${squadId} and pause_reason = ${reason}`.execute(this.db())
    return Number(rows[0]?.n ?? 0)
  }
}
