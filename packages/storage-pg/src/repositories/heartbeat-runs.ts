import { sql, type Kysely } from 'kysely'
import type {
  HeartbeatRun,
  HeartbeatRunFilter,
  HeartbeatRunLiveness,
  HeartbeatRunRepository,
  HeartbeatRunStatus,
  IssueSummary,
  NewHeartbeatRun,
  RunFinish,
  RunSlotCaps,
  RunStart,
  RunUsageDelta,
} from '@slaw/core'
import type { Database, Row } from '../schema.js'
import { now } from '../sql-helpers.js'

/** The run record: its token and cost columns gathered into `usage` (int8 may come back as strings). */
const toRun = ({
  inputTokens,
  outputTokens,
  costCents,
  cachedInputTokens,
  cacheWriteTokens,
  unpricedTokens,
  costStatus,
  provider,
  biller,
  billingType,
  ...run
}: Row<'heartbeatRuns'>): HeartbeatRun => ({
  ...run,
  usage: {
    inputTokens: Number(inputTokens),
    cachedInputTokens: Number(cachedInputTokens),
    cacheWriteTokens: Number(cacheWriteTokens),
    outputTokens: Number(outputTokens),
    unpricedTokens: Number(unpricedTokens),
    // Nobody priced any of it: the cost is unknown, not 0.
    costCents: costStatus === 'unpriced' ? null : Number(costCents),
    costStatus: (costStatus ?? null) as HeartbeatRun['usage']['costStatus'],
    provider: provider ?? null,
    biller: biller ?? null,
    billingType: billingType ?? null,
  },
})

/** One lock key for run slot decisions: counting and starting happen under it, across nodes. */
const runSlotLock = sql`pg_advisory_xact_lock(hashtext('slaw:run-slots'))`

export class PgHeartbeatRunRepository implements HeartbeatRunRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  /** Moves one run between statuses in the day rollup (heartbeat_run_days) the dashboard reads. */
  private async countDay(squadId: string, createdAt: Date, from: string | null, to: string): Promise<void> {
    const day = sql`(${createdAt}::timestamptz at time zone 'UTC')::date`
    // Append-only deltas: no row is shared between writers, so nothing waits here (see 0005-runs).
    const deltas = from
      ? [
          { status: from, by: -1 },
          { status: to, by: 1 },
        ]
      : [{ status: to, by: 1 }]
    await sql`insert into heartbeat_run_days (squad_id, day, status, runs)
              values ${sql.join(deltas.map((d) => sql`(${squadId}, ${day}, ${d.status}, ${d.by})`))}`.execute(this.db())
  }

  async queue(run: NewHeartbeatRun): Promise<{ run: HeartbeatRun; created: boolean }> {
    // heartbeat_runs_coalesce allows one queued run per agent and issue: a concurrent second wake
    // waits for the first to commit and then folds into it.
    // A new run counts in its day's rollup (countDay's delta) in the same statement: one round trip.
    const { rows } = await sql<Row<'heartbeatRuns'>>`
      with q as (
        insert into heartbeat_runs (id, squad_id, agent_id, issue_id, reason, approval_id, comment_id, routine_run_id, continuation_depth, retry_attempt)
        values (${run.id}, ${run.squadId}, ${run.agentId}, ${run.issueId}, ${run.reason}, ${run.approvalId}, ${run.commentId}, ${run.routineRunId}, ${run.continuationDepth}, ${run.retryAttempt ?? 0})
        on conflict (agent_id, (coalesce(issue_id, '00000000-0000-0000-0000-000000000000'::uuid))) where status = 'queued'
        do update set coalesced_count = heartbeat_runs.coalesced_count + 1,
                      comment_id = coalesce(excluded.comment_id, heartbeat_runs.comment_id),
                      approval_id = coalesce(excluded.approval_id, heartbeat_runs.approval_id),
                      routine_run_id = coalesce(excluded.routine_run_id, heartbeat_runs.routine_run_id),
                      updated_at = now()
        returning *, (xmax = 0) as inserted),
      d as (
        insert into heartbeat_run_days (squad_id, day, status, runs)
        select squad_id, (created_at at time zone 'UTC')::date, 'queued', 1 from q where inserted)
      select * from q`.execute(this.db())
    const { inserted, ...row } = rows[0] as Row<'heartbeatRuns'> & { inserted: boolean }
    return { run: toRun(row), created: inserted }
  }

  async get(id: string): Promise<HeartbeatRun | undefined> {
    const row = await this.db().selectFrom('heartbeatRuns').selectAll().where('id', '=', id).executeTakeFirst()
    return row && toRun(row)
  }

  async list(f: HeartbeatRunFilter): Promise<HeartbeatRun[]> {
    let q = this.db().selectFrom('heartbeatRuns').selectAll().where('squadId', '=', f.squadId)
    if (f.agentId) q = q.where('agentId', '=', f.agentId)
    if (f.statuses?.length) q = q.where('status', 'in', f.statuses)
    if (f.beforeId) q = q.where('id', '<', f.beforeId)
    return (await q.orderBy('id', 'desc').limit(f.limit).execute()).map(toRun)
  }

  async listForIssue(issueId: string, limit: number): Promise<HeartbeatRun[]> {
    const { rows } = await sql<Row<'heartbeatRuns'>>`
      select r.* from heartbeat_runs r
       where r.id in (
         select id from heartbeat_runs where issue_id = ${issueId}
         union
         select a.run_id from activity a
          join issues i on i.id = ${issueId} and a.squad_id = i.squad_id
          where a.entity_type = 'issue' and a.entity_id = ${issueId} and a.run_id is not null)
       order by r.id desc
       limit ${limit}`.execute(this.db())
    return rows.map(toRun)
  }

  async touchedIssues(runId: string): Promise<IssueSummary[]> {
    const { rows } = await sql<IssueSummary>`
      select i.id, i.identifier, i.title, i.status, i.priority, i.assignee_agent_id
        from issues i
       where i.id in (select distinct entity_id::uuid from activity where run_id = ${runId} and entity_type = 'issue')
       order by i.identifier`.execute(this.db())
    return rows
  }

  async start(id: string, start: RunStart, caps: RunSlotCaps): Promise<'started' | 'over_cap' | 'not_queued'> {
    await sql`select ${runSlotLock}`.execute(this.db())
    const run = await this.db().selectFrom('heartbeatRuns').select(['status', 'agentId', 'squadId', 'createdAt']).where('id', '=', id).executeTakeFirst()
    if (!run || run.status !== 'queued') return 'not_queued'
    const { rows } = await sql<{ agent: string; squad: string; total: string }>`
      select count(*) filter (where agent_id = ${run.agentId}) as agent,
             count(*) filter (where squad_id = ${run.squadId}) as squad,
             count(*) as total
        from heartbeat_runs where status = 'running'`.execute(this.db())
    const c = rows[0]!
    if (Number(c.agent) >= caps.perAgent) return 'over_cap'
    if (caps.perSquad !== null && Number(c.squad) >= caps.perSquad) return 'over_cap'
    if (caps.perInstance !== null && Number(c.total) >= caps.perInstance) return 'over_cap'
    // A session another running run of the agent resumes is not handed out twice: this run starts fresh.
    let sessionId = start.sessionId ?? null
    if (sessionId) {
      const taken = await this.db().selectFrom('heartbeatRuns').select('id').where('agentId', '=', run.agentId).where('status', '=', 'running').where('sessionId', '=', sessionId).executeTakeFirst()
      if (taken) sessionId = null
    }
    await this.db()
      .updateTable('heartbeatRuns')
      .set({ status: 'running', nodeId: start.nodeId, startedAt: start.startedAt, deadlineAt: start.deadlineAt, sessionId, updatedAt: now() })
      .where('id', '=', id)
      .execute()
    await this.countDay(run.squadId, run.createdAt, 'queued', 'running')
    return 'started'
  }

  async finish(id: string, from: HeartbeatRunStatus[], end: RunFinish): Promise<HeartbeatRun | undefined> {
    // The row lock orders concurrent finishes; the loser finds the status moved on.
    const before = await this.db().selectFrom('heartbeatRuns').select(['status']).where('id', '=', id).forUpdate().executeTakeFirst()
    if (!before || !from.includes(before.status)) return undefined
    const row = await this.db()
      .updateTable('heartbeatRuns')
      .set({
        status: end.status,
        finishedAt: end.finishedAt,
        ...(end.liveness !== undefined ? { liveness: end.liveness } : {}),
        ...(end.exitCode !== undefined ? { exitCode: end.exitCode } : {}),
        ...(end.httpStatus !== undefined ? { httpStatus: end.httpStatus } : {}),
        ...(end.error !== undefined ? { error: end.error === null ? null : end.error.slice(0, 2000) } : {}),
        ...(end.outputTail !== undefined ? { outputTail: end.outputTail } : {}),
        ...(end.summary !== undefined ? { summary: end.summary === null ? null : end.summary.slice(0, 10_000) } : {}),
        ...(end.errorCode !== undefined ? { errorCode: end.errorCode === null ? null : end.errorCode.slice(0, 100) } : {}),
        ...(end.retryNotBefore !== undefined ? { retryNotBefore: end.retryNotBefore } : {}),
        ...(end.sessionId !== undefined ? { sessionId: end.sessionId } : {}),
        updatedAt: now(),
      })
      .where('id', '=', id)
      .where('status', 'in', from)
      .returningAll()
      .executeTakeFirst()
    if (row) await this.countDay(row.squadId, row.createdAt, before.status, row.status)
    return row && toRun(row)
  }

  async report(id: string, patch: { liveness?: HeartbeatRunLiveness; summary?: string }): Promise<HeartbeatRun | undefined> {
    const row = await this.db()
      .updateTable('heartbeatRuns')
      .set({ ...(patch.liveness ? { liveness: patch.liveness } : {}), ...(patch.summary !== undefined ? { summary: patch.summary } : {}), updatedAt: now() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst()
    return row && toRun(row)
  }

  async addUsage(id: string, u: RunUsageDelta): Promise<void> {
    // Cost statuses merge: the same status stays, a mix (priced and unpriced, reported and
    // estimated) is `estimated`; unpriced_tokens keeps how much no price covers.
    await sql`update heartbeat_runs set input_tokens = input_tokens + ${u.inputTokens}, output_tokens = output_tokens + ${u.outputTokens},
                 cost_cents = cost_cents + ${u.costCents}, cached_input_tokens = cached_input_tokens + ${u.cachedInputTokens ?? 0},
                 cache_write_tokens = cache_write_tokens + ${u.cacheWriteTokens ?? 0}, unpriced_tokens = unpriced_tokens + ${u.unpricedTokens ?? 0},
                 cost_status = case when ${u.costStatus ?? null}::text is null then cost_status
                                    when cost_status is null or cost_status = ${u.costStatus ?? null}::text then ${u.costStatus ?? null}::text
                                    else 'estimated' end,
                 provider = coalesce(${u.provider ?? null}::text, provider), biller = coalesce(${u.biller ?? null}::text, biller),
                 billing_type = coalesce(${u.billingType ?? null}::text, billing_type),
                 updated_at = now() where id = ${id}`.execute(this.db())
  }

  async overdue(at: Date, limit: number): Promise<HeartbeatRun[]> {
    const rows = await this.db().selectFrom('heartbeatRuns').selectAll().where('status', '=', 'running').where('deadlineAt', '<', at).orderBy('deadlineAt').limit(limit).execute()
    return rows.map(toRun)
  }

  async agentState(agentId: string): Promise<{ running: HeartbeatRun[]; last: HeartbeatRun | null; queued: number }> {
    const agent = await this.db().selectFrom('agents').select('squadId').where('id', '=', agentId).executeTakeFirst()
    if (!agent) return { running: [], last: null, queued: 0 }
    const [active, last] = await Promise.all([
      this.db()
        .selectFrom('heartbeatRuns')
        .selectAll()
        .where('squadId', '=', agent.squadId)
        .where('agentId', '=', agentId)
        .where('status', 'in', ['queued', 'running'])
        .orderBy('id', 'desc')
        .limit(100)
        .execute(),
      this.db()
        .selectFrom('heartbeatRuns')
        .selectAll()
        .where('squadId', '=', agent.squadId)
        .where('agentId', '=', agentId)
        .where('status', 'not in', ['queued', 'running'])
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst(),
    ])
    return { running: active.filter((r) => r.status === 'running').map(toRun), last: last ? toRun(last) : null, queued: active.filter((r) => r.status === 'queued').length }
  }

  async purge(runsBefore: Date, outputBefore: Date, limit: number): Promise<{ runs: number; outputs: number }> {
    const o = await sql`update heartbeat_runs set output_tail = null where id in (
        select id from heartbeat_runs where finished_at < ${outputBefore} and output_tail is not null limit ${limit})`.execute(this.db())
    // The live output chunks (migration 0013) go with the output tail.
    const c = await sql`delete from heartbeat_run_output where id in (
        select id from heartbeat_run_output where created_at < ${outputBefore} limit ${limit})`.execute(this.db())
    const r = await sql`delete from heartbeat_runs where id in (
        select id from heartbeat_runs where finished_at < ${runsBefore} limit ${limit})`.execute(this.db())
    // Fold the run-activity deltas of past days into one row per squad, day and status; drop days
    // older than the runs kept.
    await sql`with gone as (delete from heartbeat_run_days where day < (now() at time zone 'UTC')::date returning *)
      insert into heartbeat_run_days (squad_id, day, status, runs)
      select squad_id, day, status, sum(runs)::int from gone
       where day >= (${runsBefore}::timestamptz at time zone 'UTC')::date
       group by squad_id, day, status having sum(runs) <> 0`.execute(this.db())
    return { runs: Number(r.numAffectedRows ?? 0), outputs: Math.max(Number(o.numAffectedRows ?? 0), Number(c.numAffectedRows ?? 0)) }
  }
}
