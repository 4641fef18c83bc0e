import { sql, type Kysely } from 'kysely'
import type { AgentWakeup, Job, JobRepository, NewJob, NewWakeup, WakeupRepository } from '@slaw/core'
import type { Database, Row } from '../schema.js'
import { json, now } from '../sql-helpers.js'

const toJob = (r: Row<'jobs'>): Job => ({ ...r, status: r.status as Job['status'] })

export class PgJobRepository implements JobRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async enqueue(j: NewJob): Promise<Job> {
    const row = await this.db()
      .insertInto('jobs')
      .values({ id: j.id, kind: j.kind, squadId: j.squadId, payload: json(j.payload), ...(j.runAt ? { runAt: j.runAt } : {}) })
      .returningAll()
      .executeTakeFirstOrThrow()
    return toJob(row)
  }

  async get(id: string): Promise<Job | undefined> {
    const row = await this.db().selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst()
    return row && toJob(row)
  }

  async claim(kinds: string[], workerId: string, leaseMs: number, limit: number): Promise<Job[]> {
    if (!kinds.length || limit < 1) return []
    // SKIP LOCKED: concurrent claimers on other nodes pass over rows being claimed, so each job has one taker.
    const { rows } = await sql<Row<'jobs'>>`
      update jobs j set status = 'running', locked_by = ${workerId}, locked_until = now() + (${leaseMs}::int * interval '1 millisecond'),
             attempts = j.attempts + 1
       where j.id in (
         select id from jobs
          where kind in (${sql.join(kinds)})
            and ((status = 'queued' and run_at <= now()) or (status = 'running' and locked_until < now()))
          order by run_at
          limit ${limit}
          for update skip locked)
      returning j.*`.execute(this.db())
    return rows.map(toJob)
  }

  async complete(id: string, workerId: string, result: Record<string, unknown> | null): Promise<boolean> {
    const r = await this.db()
      .updateTable('jobs')
      .set({ status: 'completed', result: result === null ? null : json(result), finishedAt: now(), lockedUntil: null })
      .where('id', '=', id)
      .where('lockedBy', '=', workerId)
      .where('status', '=', 'running')
      .executeTakeFirst()
    return Number(r.numUpdatedRows) > 0
  }

  async fail(id: string, workerId: string, error: string): Promise<boolean> {
    const r = await this.db()
      .updateTable('jobs')
      .set({ status: 'failed', error: error.slice(0, 2000), finishedAt: now(), lockedUntil: null })
      .where('id', '=', id)
      .where('lockedBy', '=', workerId)
      .where('status', '=', 'running')
      .executeTakeFirst()
    return Number(r.numUpdatedRows) > 0
  }
}

const toWakeup = (r: Row<'agentWakeups'>): AgentWakeup => ({ ...r, status: r.status as AgentWakeup['status'] })

export class PgWakeupRepository implements WakeupRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async enqueue(w: NewWakeup): Promise<AgentWakeup> {
    return toWakeup(await this.db().insertInto('agentWakeups').values(w).returningAll().executeTakeFirstOrThrow())
  }

  async listQueued(agentId: string): Promise<AgentWakeup[]> {
    return (await this.db().selectFrom('agentWakeups').selectAll().where('agentId', '=', agentId).where('status', '=', 'queued').orderBy('id').execute()).map(toWakeup)
  }
}
