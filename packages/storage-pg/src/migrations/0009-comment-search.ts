import { sql, type Kysely } from 'kysely'

/**
 * Comments are searched where they live. Before, each comment was folded into its issue's search
 * document, so concurrent comments on one issue queued on the issue row and the row grew with the
 * thread. Now a comment carries its own generated tsvector and the issue row stays out of the
 * comment write path; issue search (q) matches the document or any of its comments.
 */
export const statements = [
  `alter table comments add column search tsvector generated always as (to_tsvector('english', body)) stored`,
  `create index comments_search on comments using gin (search)`,
  // Issue documents no longer carry comment text.
  `update issues i set search =
     setweight(to_tsvector('simple', i.identifier), 'A') || setweight(to_tsvector('english', i.title), 'A')
     || setweight(to_tsvector('english', coalesce(i.description, '')), 'B')
   where exists (select 1 from comments c where c.issue_id = i.id)`,
]

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw(`drop index if exists comments_search`).execute(db)
  await sql.raw(`alter table comments drop column if exists search`).execute(db)
}
