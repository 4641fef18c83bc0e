import type { Kysely } from 'kysely'
import type { Comment, CommentRepository, DocumentRepository, DocumentWrite, Interaction, InteractionRepository, InteractionStatus, IssueDocument, NewComment, NewInteraction } from '@slaw/core'
import type { Database } from '../schema.js'
import { guardUnique, json, now } from '../sql-helpers.js'

const commentColumns = ['id', 'issueId', 'squadId', 'body', 'authorType', 'authorId', 'createdAt'] as const

export class PgCommentRepository implements CommentRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(comments: NewComment[]): Promise<Comment[]> {
    if (!comments.length) return []
    // The comment's own search vector is a generated column: the issue row is not touched.
    const rows = await this.db().insertInto('comments').values(comments).returning(commentColumns).execute()
    const byId = new Map(rows.map((r) => [r.id, r]))
    return comments.map((c) => byId.get(c.id)!)
  }

  async get(issueId: string, commentId: string): Promise<Comment | undefined> {
    return this.db().selectFrom('comments').select(commentColumns).where('issueId', '=', issueId).where('id', '=', commentId).executeTakeFirst()
  }

  async list(issueId: string, opts: { after?: Comment; order: 'asc' | 'desc'; limit: number }): Promise<Comment[]> {
    // Comment ids are UUIDv7, so id order is creation order.
    let q = this.db().selectFrom('comments').select(commentColumns).where('issueId', '=', issueId)
    if (opts.after) q = q.where('id', opts.order === 'asc' ? '>' : '<', opts.after.id)
    return q.orderBy('id', opts.order).limit(opts.limit).execute()
  }

  async cursor(issueId: string): Promise<{ totalComments: number; latestCommentId: string | null; latestCommentAt: Date | null }> {
    const agg = await this.db()
      .selectFrom('comments')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('issueId', '=', issueId)
      .executeTakeFirstOrThrow()
    const latest = await this.db().selectFrom('comments').select(['id', 'createdAt']).where('issueId', '=', issueId).orderBy('id', 'desc').limit(1).executeTakeFirst()
    return { totalComments: Number(agg.n), latestCommentId: latest?.id ?? null, latestCommentAt: latest?.createdAt ?? null }
  }
}

export class PgDocumentRepository implements DocumentRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async list(issueId: string): Promise<IssueDocument[]> {
    return this.db().selectFrom('issueDocuments').selectAll().where('issueId', '=', issueId).orderBy('key').execute()
  }

  async get(issueId: string, key: string): Promise<IssueDocument | undefined> {
    return this.db().selectFrom('issueDocuments').selectAll().where('issueId', '=', issueId).where('key', '=', key).executeTakeFirst()
  }

  async put(d: DocumentWrite): Promise<IssueDocument | undefined> {
    if (d.baseRevisionId === null) {
      // Create only: a concurrent creator wins the unique index, the loser gets undefined (conflict).
      const row = await this.db()
        .insertInto('issueDocuments')
        .values({ id: d.id, issueId: d.issueId, key: d.key, title: d.title, format: d.format, body: d.body, revisionId: d.newRevisionId })
        .onConflict((oc) => oc.columns(['issueId', 'key']).doNothing())
        .returningAll()
        .executeTakeFirst()
      return row
    }
    const row = await this.db()
      .updateTable('issueDocuments')
      .set({ title: d.title, format: d.format, body: d.body, revisionId: d.newRevisionId, updatedAt: now() })
      .where('issueId', '=', d.issueId)
      .where('key', '=', d.key)
      .where('revisionId', '=', d.baseRevisionId)
      .returningAll()
      .executeTakeFirst()
    return row
  }

  async delete(issueId: string, key: string): Promise<boolean> {
    const r = await this.db().deleteFrom('issueDocuments').where('issueId', '=', issueId).where('key', '=', key).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }
}

export class PgInteractionRepository implements InteractionRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(x: NewInteraction): Promise<{ interaction: Interaction; created: boolean }> {
    const row = await guardUnique(
      this.db()
        .insertInto('interactions')
        .values({ ...x, payload: json(x.payload) })
        .onConflict((oc) => oc.columns(['issueId', 'idempotencyKey']).where('idempotencyKey', 'is not', null).doNothing())
        .returningAll()
        .executeTakeFirst(),
    )
    if (row) return { interaction: row, created: true }
    const existing = await this.db().selectFrom('interactions').selectAll().where('issueId', '=', x.issueId).where('idempotencyKey', '=', x.idempotencyKey).executeTakeFirstOrThrow()
    return { interaction: existing, created: false }
  }

  async get(issueId: string, id: string): Promise<Interaction | undefined> {
    return this.db().selectFrom('interactions').selectAll().where('issueId', '=', issueId).where('id', '=', id).executeTakeFirst()
  }

  async list(issueId: string): Promise<Interaction[]> {
    return this.db().selectFrom('interactions').selectAll().where('issueId', '=', issueId).orderBy('id').execute()
  }

  async resolve(id: string, status: Exclude<InteractionStatus, 'pending'>, response: Record<string, unknown> | null): Promise<Interaction | undefined> {
    const row = await this.db()
      .updateTable('interactions')
      .set({ status, response: response === null ? null : json(response), resolvedAt: now() })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .returningAll()
      .executeTakeFirst()
    return row
  }
}
