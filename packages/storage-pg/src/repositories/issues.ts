import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { CheckoutRequest, Issue, IssueFilter, IssuePatch, IssueRef, IssueRepository, IssueStatus, IssueSummary, NewIssue } from '@slaw/core'
import type { Database, Row } from '../schema.js'
import { guardUnique, now, priorityRank } from '../sql-helpers.js'

/** The issue record's columns (the table also holds the priority rank and the search document). */
export const issueColumns = [
  'id',
  'squadId',
  'number',
  'identifier',
  'title',
  'description',
  'status',
  'priority',
  'assigneeAgentId',
  'assigneeUserId',
  'checkoutAgentId',
  'checkedOutAt',
  'parentId',
  'goalId',
  'projectId',
  'billingCode',
  'createdAt',
  'updatedAt',
] as const
type IssueRow = Pick<Row<'issues'>, (typeof issueColumns)[number]>
/** `returning` of a raw statement: the issue columns under their record names. */
const returningColumns = sql.raw(issueColumns.map((c) => `${c.replace(/[A-Z]/g, (m) => '_' + m.toLowerCase())} as "${c}"`).join(', '))

const summaryColumns = ['id', 'identifier', 'title', 'status', 'priority', 'assigneeAgentId'] as const

/** The search document: identifier verbatim, title and description stemmed (English); comments have their own. */
const searchDocument = (identifier: string, title: string, description: string | null) => searchDocumentOf(sql`${identifier}`, sql`${title}`, sql`${description}::text`)
/** The same document over SQL expressions (columns of a statement that computes them). */
const searchDocumentOf = (identifier: RawBuilder<unknown>, title: RawBuilder<unknown>, description: RawBuilder<unknown>) =>
  sql`setweight(to_tsvector('simple', ${identifier}), 'A') || setweight(to_tsvector('english', ${title}), 'A') || setweight(to_tsvector('english', coalesce(${description}, '')), 'B')`

/** Issue identifiers as users type them: up to four letters, a dash, a number. */
const identifierShaped = /^[A-Za-z]{1,4}-\d{1,9}$/

export class PgIssueRepository implements IssueRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(i: NewIssue): Promise<Issue> {
    const row = await guardUnique(
      this.db()
        .insertInto('issues')
        .values({ ...i, priorityRank: priorityRank[i.priority] ?? 2, search: searchDocument(i.identifier, i.title, i.description) })
        .returning(issueColumns)
        .executeTakeFirstOrThrow(),
    )
    return row
  }

  async insertNumbered(issues: Array<Omit<NewIssue, 'number' | 'identifier'>>): Promise<Array<Issue | undefined>> {
    if (!issues.length) return []
    // One statement: each squad's counter moves by its number of new issues (its row stays locked
    // until commit, so numbers follow commit order), the issues take the numbers in the order
    // given, and an archived squad matches no row, so its issues take none and are not inserted.
    // Two nodes' batches spanning the same squads may lock them in different orders: PostgreSQL
    // aborts one as a deadlock, and the service retries that batch create by create.
    const values = sql.join(
      issues.map(
        (i, ord) => sql`(${ord}::int, ${i.id}::uuid, ${i.squadId}::uuid, ${i.title}::text, ${i.description}::text, ${i.status}::text,
        ${i.priority}::text, ${priorityRank[i.priority] ?? 2}::int, ${i.assigneeAgentId}::uuid, ${i.assigneeUserId}::text, ${i.parentId}::uuid,
        ${i.goalId}::uuid, ${i.projectId}::uuid, ${i.billingCode}::text)`,
      ),
    )
    const { rows } = await guardUnique(
      sql<IssueRow & { ord: number }>`
        with v0 (ord, id, squad_id, title, description, status, priority, priority_rank, assignee_agent_id, assignee_user_id, parent_id, goal_id, project_id, billing_code)
          as (values ${values}),
        c as (select squad_id, count(*)::int as k from v0 group by squad_id),
        n as (
          update squads s set issue_counter = s.issue_counter + c.k
            from c
           where s.id = c.squad_id and s.status <> 'archived'
          returning s.id, s.issue_counter - c.k as base, s.issue_prefix
        ),
        v as (select v0.*, (row_number() over (partition by v0.squad_id order by v0.ord))::int as number from v0)
        insert into issues (id, squad_id, number, identifier, title, description, status, priority, priority_rank,
                            assignee_agent_id, assignee_user_id, parent_id, goal_id, project_id, billing_code, search)
        select v.id, v.squad_id, n.base + v.number, n.issue_prefix || '-' || (n.base + v.number), v.title, v.description, v.status, v.priority,
               v.priority_rank, v.assignee_agent_id, v.assignee_user_id, v.parent_id, v.goal_id, v.project_id, v.billing_code,
               ${searchDocumentOf(sql`n.issue_prefix || '-' || (n.base + v.number)`, sql`v.title`, sql`v.description`)}
          from v join n on n.id = v.squad_id
         order by v.ord
        returning ${returningColumns}`.execute(this.db()),
    )
    const byId = new Map(rows.map((r) => [r.id, r]))
    return issues.map((i) => byId.get(i.id))
  }

  async get(id: string): Promise<Issue | undefined> {
    return this.db().selectFrom('issues').select(issueColumns).where('id', '=', id).executeTakeFirst()
  }

  async getByIdentifier(identifier: string): Promise<Issue | undefined> {
    return this.db().selectFrom('issues').select(issueColumns).where('identifier', '=', identifier).executeTakeFirst()
  }

  async list(f: IssueFilter): Promise<IssueSummary[]> {
    let q = this.db().selectFrom('issues').select(summaryColumns).where('squadId', '=', f.squadId)
    if (f.statuses?.length) q = q.where('status', 'in', f.statuses)
    if (f.assigneeAgentId) q = q.where('assigneeAgentId', '=', f.assigneeAgentId)
    if (f.projectId) q = q.where('projectId', '=', f.projectId)
    // English for words (stemmed, like the document); 'simple' too, so an identifier whose prefix
    // English would stem (DOCS-1 → doc) still matches the identifier indexed verbatim. Both use the GIN index.
    // Comments carry their own vector (migration 0009): an issue matches through any of its comments.
    if (f.q && identifierShaped.test(f.q.trim())) {
      // An identifier-shaped query (BIGS-77777) matches few rows, but its 'simple' first term matches
      // every issue of the squad, and a planner may then walk the id index filtering 100k documents.
      // The identifier index finds the issue itself and English search finds mentions of it (in
      // titles, descriptions, comments); the few ids are collected first, then fetched by key.
      const text = f.q.trim()
      q = q.where(sql<boolean>`id = any(array(
        select i.id from issues i where i.identifier = ${text.toUpperCase()}
        union select i.id from issues i where i.squad_id = ${f.squadId} and i.search @@ websearch_to_tsquery('english', ${text})
        union select c.issue_id from comments c where c.squad_id = ${f.squadId} and c.search @@ websearch_to_tsquery('english', ${text})))`)
    } else if (f.q) {
      q = q.where(sql<boolean>`(search @@ websearch_to_tsquery('english', ${f.q}) or search @@ websearch_to_tsquery('simple', ${f.q})
        or id in (select c.issue_id from comments c where c.squad_id = ${f.squadId} and c.search @@ websearch_to_tsquery('english', ${f.q})))`)
    }
    return q
      .orderBy('id', 'desc')
      .limit(f.limit)
      .offset(f.offset ?? 0)
      .execute()
  }

  async inbox(agentId: string, statuses: IssueStatus[], limit: number): Promise<IssueSummary[]> {
    const rows = await this.db()
      .selectFrom('issues')
      .select(summaryColumns)
      .where('assigneeAgentId', '=', agentId)
      .where('status', 'in', statuses)
      .orderBy('priorityRank')
      .orderBy('id')
      .limit(limit)
      .execute()
    return rows
  }

  async update(id: string, patch: IssuePatch): Promise<Issue | undefined> {
    const set: Record<string, unknown> = { ...patch, updatedAt: now() }
    if (patch.priority) set.priorityRank = priorityRank[patch.priority]
    if (patch.checkoutAgentId === null) set.checkedOutAt = null
    return this.db().updateTable('issues').set(set).where('id', '=', id).returning(issueColumns).executeTakeFirst()
  }

  async checkout(req: CheckoutRequest): Promise<Issue | undefined> {
    // The final guard: only while nobody else owns it and its status is still one the caller accepted.
    const row = await this.db()
      .updateTable('issues')
      .set({ status: 'in_progress', assigneeAgentId: req.agentId, checkoutAgentId: req.agentId, checkedOutAt: now(), updatedAt: now() })
      .where('id', '=', req.id)
      .where((eb) => eb.or([eb('checkoutAgentId', 'is', null), eb('checkoutAgentId', '=', req.agentId)]))
      .where('status', 'in', req.allowedStatuses)
      .returning(issueColumns)
      .executeTakeFirst()
    return row
  }

  async release(id: string, agentId: string | null): Promise<Issue | undefined> {
    let q = this.db().updateTable('issues').set({ checkoutAgentId: null, checkedOutAt: null, updatedAt: now() }).where('id', '=', id)
    if (agentId) q = q.where('checkoutAgentId', '=', agentId)
    return q.returning(issueColumns).executeTakeFirst()
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db().deleteFrom('issues').where('id', '=', id).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }

  async unassignAgent(agentId: string): Promise<number> {
    const a = await this.db().updateTable('issues').set({ assigneeAgentId: null, updatedAt: now() }).where('assigneeAgentId', '=', agentId).executeTakeFirst()
    const c = await this.db().updateTable('issues').set({ checkoutAgentId: null, checkedOutAt: null, updatedAt: now() }).where('checkoutAgentId', '=', agentId).executeTakeFirst()
    return Number(a.numUpdatedRows) + Number(c.numUpdatedRows)
  }

  async setBlockers(issueId: string, ids: string[]): Promise<void> {
    // Replacing a set is delete-then-insert: hold the issue row so two replacements of the same set
    // run one after the other (the later one wins whole) instead of colliding on the primary key.
    await this.db().selectFrom('issues').select('id').where('id', '=', issueId).forUpdate().execute()
    await this.db().deleteFrom('issueBlockers').where('issueId', '=', issueId).execute()
    if (ids.length)
      await this.db()
        .insertInto('issueBlockers')
        .values(ids.map((b) => ({ issueId, blockedByIssueId: b })))
        .execute()
  }

  async blockedBy(issueId: string): Promise<IssueRef[]> {
    return this.db()
      .selectFrom('issueBlockers as b')
      .innerJoin('issues as i', 'i.id', 'b.blockedByIssueId')
      .select(['i.id', 'i.identifier', 'i.title', 'i.status'])
      .where('b.issueId', '=', issueId)
      .orderBy('i.id')
      .execute()
  }

  async blocks(issueId: string): Promise<IssueRef[]> {
    return this.db()
      .selectFrom('issueBlockers as b')
      .innerJoin('issues as i', 'i.id', 'b.issueId')
      .select(['i.id', 'i.identifier', 'i.title', 'i.status'])
      .where('b.blockedByIssueId', '=', issueId)
      .orderBy('i.id')
      .execute()
  }

  async getWithLinks(id: string): Promise<{ issue: Issue; blockedBy: IssueRef[]; blocks: IssueRef[] } | undefined> {
    const ref = (alias: string) => sql.raw(`json_build_object('id', ${alias}.id, 'identifier', ${alias}.identifier, 'title', ${alias}.title, 'status', ${alias}.status)`)
    const row = await this.db()
      .selectFrom('issues')
      .select(issueColumns)
      .select([
        sql<IssueRef[]>`coalesce((select json_agg(${ref('bi')} order by bi.id) from issue_blockers b join issues bi on bi.id = b.blocked_by_issue_id where b.issue_id = issues.id), '[]'::json)`.as(
          'blockedByLinks',
        ),
        sql<IssueRef[]>`coalesce((select json_agg(${ref('ki')} order by ki.id) from issue_blockers k join issues ki on ki.id = k.issue_id where k.blocked_by_issue_id = issues.id), '[]'::json)`.as(
          'blocksLinks',
        ),
      ])
      .where('id', '=', id)
      .executeTakeFirst()
    if (!row) return undefined
    const { blockedByLinks, blocksLinks, ...issue } = row
    return { issue, blockedBy: blockedByLinks, blocks: blocksLinks }
  }

  async ancestors(issueId: string): Promise<IssueRef[]> {
    const { rows } = await sql<IssueRef>`
      with recursive up(id, identifier, title, status, parent_id, depth) as (
        select p.id, p.identifier, p.title, p.status, p.parent_id, 1
          from issues i join issues p on p.id = i.parent_id
         where i.id = ${issueId}
        union all
        select p.id, p.identifier, p.title, p.status, p.parent_id, u.depth + 1
          from up u join issues p on p.id = u.parent_id
         where u.depth < 50
      )
      select id, identifier, title, status from up order by depth`.execute(this.db())
    return rows
  }

  async existingIds(squadId: string, ids: string[]): Promise<string[]> {
    if (!ids.length) return []
    const rows = await this.db().selectFrom('issues').select('id').where('squadId', '=', squadId).where('id', 'in', ids).execute()
    return rows.map((r) => r.id)
  }

  async refreshSearch(issueId: string): Promise<void> {
    await sql`
      update issues i set search =
        setweight(to_tsvector('simple', i.identifier), 'A') || setweight(to_tsvector('english', i.title), 'A')
        || setweight(to_tsvector('english', coalesce(i.description, '')), 'B')
      where i.id = ${issueId}`.execute(this.db())
  }

  async openChildren(parentId: string): Promise<number> {
    // Index issues_parent.
    const row = await this.db()
      .selectFrom('issues')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('parentId', '=', parentId)
      .where('status', 'not in', ['done', 'cancelled'])
      .executeTakeFirst()
    return Number(row?.n ?? 0)
  }
}
