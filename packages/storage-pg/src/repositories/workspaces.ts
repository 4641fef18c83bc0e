import type { Kysely, Selectable } from 'kysely'
import type { NewWorkspace, Workspace, WorkspaceRepository } from '@slaw/core'
import type { Database } from '../schema.js'
import type { WorkspacesTable } from '../schema-governance.js'
import { json } from '../sql-helpers.js'

const toWorkspace = (r: Selectable<WorkspacesTable>): Workspace => ({ ...r, status: r.status as Workspace['status'] })

export class PgWorkspaceRepository implements WorkspaceRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(w: NewWorkspace): Promise<Workspace> {
    const row = await this.db()
      .insertInto('workspaces')
      .values({ ...w, metadata: json(w.metadata) })
      .returningAll()
      .executeTakeFirstOrThrow()
    return toWorkspace(row)
  }

  async list(projectId: string, limit: number): Promise<Workspace[]> {
    const rows = await this.db().selectFrom('workspaces').selectAll().where('projectId', '=', projectId).orderBy('id', 'desc').limit(limit).execute()
    return rows.map(toWorkspace)
  }
}
