import { sql, type Kysely } from 'kysely'
import type { NewSquad, Squad, SquadPatch, SquadRepository, SquadRowLock } from '@slaw/core'
import type { Database, Row } from '../schema.js'
import { guardUnique, now } from '../sql-helpers.js'

/** The squad record: the row without the counters and ceilings only storage reads. */
export const toSquad = ({ issueCounter: _counter, budgetMonthlyTokens: _tokens, ...squad }: Row<'squads'>): Squad => squad

export class PgSquadRepository implements SquadRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(s: NewSquad): Promise<Squad> {
    const row = await guardUnique(this.db().insertInto('squads').values({ id: s.id, name: s.name, slug: s.slug, issuePrefix: s.issuePrefix }).returningAll().executeTakeFirstOrThrow())
    return toSquad(row)
  }

  async get(id: string, opts: { lock?: SquadRowLock } = {}): Promise<Squad | undefined> {
    let q = this.db().selectFrom('squads').selectAll().where('id', '=', id)
    if (opts.lock === 'share') q = q.forShare()
    else if (opts.lock === 'update') q = q.forUpdate()
    const row = await q.executeTakeFirst()
    return row && toSquad(row)
  }

  async getOfIssue(issueId: string): Promise<Squad | undefined> {
    const row = await this.db()
      .selectFrom('squads')
      .selectAll()
      .where('id', '=', (eb) => eb.selectFrom('issues').select('issues.squadId').where('issues.id', '=', issueId))
      .executeTakeFirst()
    return row && toSquad(row)
  }

  async list(filter: { ids?: string[] } = {}): Promise<Squad[]> {
    let q = this.db().selectFrom('squads').selectAll().orderBy('createdAt').orderBy('id')
    if (filter.ids) {
      if (!filter.ids.length) return []
      q = q.where('id', 'in', filter.ids)
    }
    return (await q.execute()).map(toSquad)
  }

  async takenPrefixes(candidates: string[]): Promise<string[]> {
    if (!candidates.length) return []
    const rows = await this.db().selectFrom('squads').select('issuePrefix').where('issuePrefix', 'in', candidates).execute()
    return rows.map((r) => r.issuePrefix)
  }

  async update(id: string, patch: SquadPatch): Promise<Squad | undefined> {
    const row = await this.db()
      .updateTable('squads')
      .set({ ...patch, updatedAt: now() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst()
    return row && toSquad(row)
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db().deleteFrom('squads').where('id', '=', id).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }

  async nextIssueNumber(id: string): Promise<number> {
    const row = await this.db().updateTable('squads').set({ issueCounter: sql`issue_counter + 1` }).where('id', '=', id).returning('issueCounter').executeTakeFirstOrThrow()
    return row.issueCounter
  }
}
