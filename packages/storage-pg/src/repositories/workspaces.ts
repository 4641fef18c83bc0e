import type { Kysely } from 'kysely'
import type { NewWorkspace, Workspace, WorkspaceRepository } from '@slaw/core'
import type { Database } from '../schema.js'
import { json } from '../sql-helpers.js'

export class PgWorkspaceRepository implements WorkspaceRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(w: NewWorkspace): Promise<Workspace> {
    const row = await this.db()
      .insertInto('workspaces')
      .values({ ...w, metadata: json(w.metadata) })
      .returningAll()
      .executeTakeFirstOrThrow()
    return row
  }

  async list(projectId: string, limit: number): Promise<Workspace[]> {
    return this.db().selectFrom('workspaces').selectAll().where('projectId', '=', projectId).orderBy('id', 'desc').limit(limit).execute()
  }
}
