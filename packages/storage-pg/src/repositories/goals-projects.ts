import { sql, type Kysely } from 'kysely'
import type { Goal, GoalPatch, GoalRepository, NewGoal, NewProject, Project, ProjectPatch, ProjectRepository } from '@slaw/core'
import type { Database } from '../schema.js'
import { now } from '../sql-helpers.js'

export class PgGoalRepository implements GoalRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(g: NewGoal): Promise<Goal> {
    return this.db().insertInto('goals').values(g).returningAll().executeTakeFirstOrThrow()
  }

  async get(id: string): Promise<Goal | undefined> {
    return this.db().selectFrom('goals').selectAll().where('id', '=', id).executeTakeFirst()
  }

  async list(squadId: string, page: { limit: number; offset?: number }): Promise<Goal[]> {
    // Ids are UUIDv7, so id order is creation order (index goals_squad).
    return this.db()
      .selectFrom('goals')
      .selectAll()
      .where('squadId', '=', squadId)
      .orderBy('id')
      .limit(page.limit)
      .offset(page.offset ?? 0)
      .execute()
  }

  async update(id: string, patch: GoalPatch): Promise<Goal | undefined> {
    return this.db()
      .updateTable('goals')
      .set({ ...patch, updatedAt: now() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst()
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db().deleteFrom('goals').where('id', '=', id).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }
}

export class PgProjectRepository implements ProjectRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(p: NewProject): Promise<Project> {
    return this.db().insertInto('projects').values(p).returningAll().executeTakeFirstOrThrow()
  }

  async get(id: string, opts: { forShare?: boolean } = {}): Promise<Project | undefined> {
    let q = this.db().selectFrom('projects').selectAll().where('id', '=', id)
    if (opts.forShare) q = q.forShare()
    return q.executeTakeFirst()
  }

  async list(squadId: string, page: { limit: number; offset?: number }): Promise<Project[]> {
    return this.db()
      .selectFrom('projects')
      .selectAll()
      .where('squadId', '=', squadId)
      .orderBy('id')
      .limit(page.limit)
      .offset(page.offset ?? 0)
      .execute()
  }

  async update(id: string, patch: ProjectPatch): Promise<Project | undefined> {
    return this.db()
      .updateTable('projects')
      .set({ ...patch, updatedAt: now() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst()
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
