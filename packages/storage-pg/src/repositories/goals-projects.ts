import type { Kysely } from 'kysely'
import type { Goal, GoalRepository, Project, ProjectRepository } from '@slaw/core'
import type { Database, Row } from '../schema.js'

export const toGoal = (r: Row<'goals'>): Goal => ({ ...r, status: r.status as Goal['status'] })
export const toProject = (r: Row<'projects'>): Project => ({ ...r, pauseReason: r.pauseReason as Project['pauseReason'] })

export class PgGoalRepository implements GoalRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async get(id: string): Promise<Goal | undefined> {
    const row = await this.db().selectFrom('goals').selectAll().where('id', '=', id).executeTakeFirst()
    return row && toGoal(row)
  }
}

export class PgProjectRepository implements ProjectRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async get(id: string): Promise<Project | undefined> {
    const row = await this.db().selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirst()
    return row && toProject(row)
  }
}
