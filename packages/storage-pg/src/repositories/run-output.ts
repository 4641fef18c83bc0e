import { sql, type Kysely } from 'kysely'
import type { NewRunOutputChunk, RunOutputChunk, RunOutputStore } from '@slaw/core'
import type { Database } from '../schema.js'
import { recordset } from '../sql-helpers.js'

const columns = [
  ['run_id', 'uuid'],
  ['squad_id', 'uuid'],
  ['agent_id', 'uuid'],
  ['issue_id', 'uuid'],
  ['stream', 'text'],
  ['text', 'text'],
  ['"offset"', 'bigint'],
] as const

/** Run output chunks (migration 0013); every row is also a `run.output` event of the feed. */
export class PgRunOutputStore implements RunOutputStore {
  constructor(private readonly db: () => Kysely<Database>) {}

  async append(chunks: NewRunOutputChunk[], keepChars: number): Promise<void> {
    if (!chunks.length) return
    const rows = chunks.map((c) => ({ run_id: c.runId, squad_id: c.squadId, agent_id: c.agentId, issue_id: c.issueId, stream: c.stream, text: c.text, offset: c.offset }))
    await sql`insert into heartbeat_run_output (run_id, squad_id, agent_id, issue_id, stream, text, "offset") ${recordset(rows, columns)}`.execute(this.db())
    // The kept tail: chunks that start within `keepChars` of the newest end.
    for (const runId of new Set(chunks.map((c) => c.runId))) {
      await sql`
        delete from heartbeat_run_output
         where run_id = ${runId}::uuid
           and id < (select coalesce(min(id), 0) from (
                       select id, sum(length(text)) over (order by id desc) - length(text) as before
                         from heartbeat_run_output where run_id = ${runId}::uuid) kept
                      where before < ${keepChars})`.execute(this.db())
    }
  }

  async read(runId: string, afterId: string, limit: number): Promise<RunOutputChunk[]> {
    const after = /^\d{1,19}$/.test(afterId) ? afterId : '0'
    const { rows } = await sql<RunOutputChunk>`
      select id::text as id, run_id as "runId", stream, text, "offset"::float8 as "offset", created_at as "createdAt"
        from heartbeat_run_output where run_id = ${runId}::uuid and id > ${after}::bigint order by id limit ${limit}`.execute(this.db())
    return rows
  }
}
