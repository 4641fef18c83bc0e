import { sql, type Kysely } from 'kysely'
import type { AgentWakeup, Job, JobRepository, NewJob, NewWakeup, WakeupRepository } from '@slaw/core'
import type { Database, Row } from '../schema.js'
import { json, now } from '../sql-helpers.js'

export class PgJobRepository implements JobRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async enqueue(j: NewJob): Promise<Job> {
    const values = {
      id: j.id,
      kind: j.kind,
      squadId: j.squadId,
      payload: json(j.payload),
      ...(j.runAt ? { runAt: j.runAt } : {}),
      ...(j.dedupeKey ? { dedupeKey: j.dedupeKey } : {}),
      ...(j.maxAttempts ? { maxAttempts: j.maxAttempts } : {}),
    }
    if (!j.dedupeKey) return this.db().insertInto('jobs').values(values).returningAll().executeTakeFirstOrThrow()
    // The partial unique index jobs_dedupe holds one unfinished job per key; a second enqueue waits
    // for a concurrent first one to commit, then finds it.
    // The predicate is literal: PostgreSQL infers a partial index only from a predicate it can prove.
    const { rows } = await sql<Row<'jobs'>>`
      insert into jobs (id, kind, squad_id, payload, run_at, dedupe_key, max_attempts)
      values (${j.id}, ${j.kind}, ${j.squadId}, ${json(j.payload)}, ${j.runAt ?? sql`now()`}, ${j.dedupeKey}, ${j.maxAttempts ?? 5})
      on conflict (kind, dedupe_key) where dedupe_key is not null and status in ('queued', 'running') do nothing
      returning *`.execute(this.db())
    const row = rows[0]
    if (row) return row
    const existing = await this.db().selectFrom('jobs').selectAll().where('kind', '=', j.kind).where('dedupeKey', '=', j.dedupeKey).where('status', 'in', ['queued', 'running']).executeTakeFirst()
    // Finished between the conflict and the read: enqueue again (it is no longer a duplicate).
    return existing ?? this.enqueue(j)
  }

  async get(id: string): Promise<Job | undefined> {
    return this.db().selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst()
  }

  async claim(kinds: string[], workerId: string, leaseMs: number, limit: number, at?: Date): Promise<Job[]> {
    if (!kinds.length || limit < 1) return []
    const t = at ? sql`${at}::timestamptz` : sql`now()`
    // SKIP LOCKED: concurrent claimers on other nodes pass over rows being claimed, so each job has one taker.
    const { rows } = await sql<Row<'jobs'>>`
      update jobs j set status = 'running', locked_by = ${workerId}, locked_until = ${t} + (${leaseMs}::int * interval '1 millisecond'),
             attempts = j.attempts + 1
       where j.id in (
         select id from jobs
          where kind in (${sql.join(kinds)})
            and ((status = 'queued' and run_at <= ${t}) or (status = 'running' and locked_until < ${t}))
          order by run_at
          limit ${limit}
          for update skip locked)
      returning j.*`.execute(this.db())
    return rows
  }

  async renew(id: string, workerId: string, leaseMs: number, at?: Date): Promise<boolean> {
    const t = at ? sql`${at}::timestamptz` : sql`now()`
    const r = await sql`update jobs set locked_until = ${t} + (${leaseMs}::int * interval '1 millisecond')
                          where id = ${id} and locked_by = ${workerId} and status = 'running'`.execute(this.db())
    return Number(r.numAffectedRows ?? 0) > 0
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

  async completeMany(workerId: string, jobs: Array<{ id: string; result: Record<string, unknown> | null }>): Promise<string[]> {
    if (!jobs.length) return []
    const values = sql.join(jobs.map((j) => sql`(${j.id}::uuid, ${j.result === null ? null : JSON.stringify(j.result)}::text)`))
    const { rows } = await sql<{ id: string }>`
      update jobs set status = 'completed', result = v.result::jsonb, finished_at = now(), locked_until = null
        from (values ${values}) as v(id, result)
       where jobs.id = v.id and jobs.locked_by = ${workerId} and jobs.status = 'running'
      returning jobs.id`.execute(this.db())
    return rows.map((r) => r.id)
  }

  async fail(id: string, workerId: string, error: string, retryAt?: Date | null): Promise<boolean> {
    const r = await this.db()
      .updateTable('jobs')
      .set(
        retryAt
          ? { status: 'queued', error: error.slice(0, 2000), runAt: retryAt, lockedBy: null, lockedUntil: null }
          : { status: 'failed', error: error.slice(0, 2000), finishedAt: now(), lockedUntil: null },
      )
      .where('id', '=', id)
      .where('lockedBy', '=', workerId)
      .where('status', '=', 'running')
      .executeTakeFirst()
    return Number(r.numUpdatedRows) > 0
  }

  async defer(id: string, workerId: string, runAt: Date): Promise<boolean> {
    const r = await this.db()
      .updateTable('jobs')
      .set((eb) => ({ status: 'queued', runAt, lockedBy: null, lockedUntil: null, attempts: eb('attempts', '-', 1) }))
      .where('id', '=', id)
      .where('lockedBy', '=', workerId)
      .where('status', '=', 'running')
      .executeTakeFirst()
    return Number(r.numUpdatedRows) > 0
  }

  async promote(kind: string, at: Date): Promise<number> {
    const r = await this.db().updateTable('jobs').set({ runAt: at }).where('kind', '=', kind).where('status', '=', 'queued').where('runAt', '>', at).executeTakeFirst()
    return Number(r.numUpdatedRows)
  }

  async purgeFinished(before: Date, limit: number): Promise<number> {
    const r = await sql`delete from jobs where id in (
        select id from jobs where status in ('completed', 'failed') and finished_at < ${before} limit ${limit})`.execute(this.db())
    return Number(r.numAffectedRows ?? 0)
  }
}

export class PgWakeupRepository implements WakeupRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async enqueue(w: NewWakeup): Promise<AgentWakeup> {
    return this.db().insertInto('agentWakeups').values(w).returningAll().executeTakeFirstOrThrow()
  }

  async listQueued(agentId: string): Promise<AgentWakeup[]> {
    return this.db().selectFrom('agentWakeups').selectAll().where('agentId', '=', agentId).where('status', '=', 'queued').orderBy('id').execute()
  }
}
