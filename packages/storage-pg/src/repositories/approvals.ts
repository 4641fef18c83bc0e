import { sql, type Kysely } from 'kysely'
import type { Approval, ApprovalComment, ApprovalFilter, ApprovalRepository, ApprovalStatus, ApprovalTransition, IssueSummary, NewApproval, NewApprovalComment } from '@slaw/core'
import type { Database } from '../schema.js'
import { json, now } from '../sql-helpers.js'

export class PgApprovalRepository implements ApprovalRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(a: NewApproval): Promise<Approval> {
    const row = await this.db()
      .insertInto('approvals')
      .values({ id: a.id, squadId: a.squadId, type: a.type, requestedByAgentId: a.requestedByAgentId, payload: json(a.payload) })
      .returningAll()
      .executeTakeFirstOrThrow()
    return row
  }

  async get(id: string): Promise<Approval | undefined> {
    return this.db().selectFrom('approvals').selectAll().where('id', '=', id).executeTakeFirst()
  }

  async list(f: ApprovalFilter): Promise<Approval[]> {
    // UUIDv7 ids: id order is creation order (index approvals_squad, or approvals_squad_status).
    let q = this.db().selectFrom('approvals').selectAll().where('squadId', '=', f.squadId)
    if (f.statuses?.length) q = q.where('status', 'in', f.statuses)
    if (f.issueId) q = q.where('id', 'in', (sub) => sub.selectFrom('approvalIssues').select('approvalId').where('issueId', '=', f.issueId!))
    return q
      .orderBy('id', 'desc')
      .limit(f.limit)
      .offset(f.offset ?? 0)
      .execute()
  }

  async transition(id: string, from: ApprovalStatus[], to: ApprovalTransition): Promise<Approval | undefined> {
    const { payload, bumpRevision, ...plain } = to
    const row = await this.db()
      .updateTable('approvals')
      .set({
        ...plain,
        ...(payload !== undefined ? { payload: json(payload) } : {}),
        ...(bumpRevision ? { revision: sql`revision + 1` } : {}),
        updatedAt: now(),
      })
      .where('id', '=', id)
      .where('status', 'in', from)
      .returningAll()
      .executeTakeFirst()
    return row
  }

  async linkIssues(approvalId: string, issueIds: string[]): Promise<void> {
    if (!issueIds.length) return
    await this.db()
      .insertInto('approvalIssues')
      .values(issueIds.map((issueId) => ({ approvalId, issueId })))
      .onConflict((oc) => oc.doNothing())
      .execute()
  }

  async linkedIssues(approvalId: string): Promise<IssueSummary[]> {
    return this.db()
      .selectFrom('approvalIssues as l')
      .innerJoin('issues as i', 'i.id', 'l.issueId')
      .select(['i.id', 'i.identifier', 'i.title', 'i.status', 'i.priority', 'i.assigneeAgentId'])
      .where('l.approvalId', '=', approvalId)
      .orderBy('i.id')
      .execute()
  }

  async linkedIssueIds(approvalId: string): Promise<string[]> {
    const rows = await this.db().selectFrom('approvalIssues').select('issueId').where('approvalId', '=', approvalId).orderBy('issueId').execute()
    return rows.map((r) => r.issueId)
  }

  async countPending(squadId: string): Promise<{ all: number; hires: number }> {
    const { rows } = await sql<{ all: number; hires: number }>`
      select count(*) as "all", count(*) filter (where type = 'hire_agent') as hires
        from approvals where squad_id = ${squadId} and status = 'pending'`.execute(this.db())
    return { all: Number(rows[0]?.all ?? 0), hires: Number(rows[0]?.hires ?? 0) }
  }

  async insertComment(c: NewApprovalComment): Promise<ApprovalComment> {
    return this.db().insertInto('approvalComments').values(c).returningAll().executeTakeFirstOrThrow()
  }

  async comments(approvalId: string, limit: number): Promise<ApprovalComment[]> {
    return this.db().selectFrom('approvalComments').selectAll().where('approvalId', '=', approvalId).orderBy('id').limit(limit).execute()
  }
}
