import { sql, type Kysely } from 'kysely'
import type {
  DueSchedule,
  EnvBinding,
  NewRoutine,
  NewRoutineRun,
  NewRoutineTrigger,
  Routine,
  RoutinePatch,
  RoutineRepository,
  RoutineRevision,
  RoutineRun,
  RoutineRunEnv,
  RoutineRunPatch,
  RoutineTrigger,
  RoutineTriggerPatch,
} from '@slaw/core'
import type { Database, Row } from '../schema.js'
import { json, now } from '../sql-helpers.js'

/** jsonb columns go through json(); everything else as given. */
function jsonColumns<T extends Record<string, unknown>>(patch: T, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue
    out[k] = keys.includes(k) && v !== null ? json(v) : v
  }
  return out
}

export class PgRoutineRepository implements RoutineRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(r: NewRoutine): Promise<Routine> {
    const row = await this.db()
      .insertInto('routines')
      .values({ ...r, variables: json(r.variables), env: json(r.env) })
      .returningAll()
      .executeTakeFirstOrThrow()
    return row
  }

  async get(id: string, opts: { forUpdate?: boolean; forShare?: boolean } = {}): Promise<Routine | undefined> {
    let q = this.db().selectFrom('routines').selectAll().where('id', '=', id)
    // NO KEY UPDATE: serialises fires and edits of the routine, yet does not block the KEY SHARE
    // locks that inserting its runs and triggers takes (the scheduler holds trigger rows while it
    // inserts runs; a plain FOR UPDATE here could deadlock with it). SHARE: fires that need no
    // serialising among themselves still wait for an edit (pause, archive) in flight.
    if (opts.forUpdate) q = q.forNoKeyUpdate()
    else if (opts.forShare) q = q.forShare()
    return q.executeTakeFirst()
  }

  async list(squadId: string, page: { limit: number; offset?: number }): Promise<Routine[]> {
    return this.db()
      .selectFrom('routines')
      .selectAll()
      .where('squadId', '=', squadId)
      .orderBy('id')
      .limit(page.limit)
      .offset(page.offset ?? 0)
      .execute()
  }

  async update(id: string, patch: RoutinePatch): Promise<Routine | undefined> {
    const row = await this.db()
      .updateTable('routines')
      .set({ ...jsonColumns(patch, ['variables', 'env']), updatedAt: now() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst()
    return row
  }

  async insertRevision(r: Omit<RoutineRevision, 'createdAt'>): Promise<RoutineRevision> {
    const row = await this.db()
      .insertInto('routineRevisions')
      .values({ ...r, snapshot: json(r.snapshot) })
      .returningAll()
      .executeTakeFirstOrThrow()
    return row
  }

  async getRevision(routineId: string, id: string): Promise<RoutineRevision | undefined> {
    return this.db().selectFrom('routineRevisions').selectAll().where('id', '=', id).where('routineId', '=', routineId).executeTakeFirst()
  }

  async listRevisions(routineId: string, page: { limit: number; offset?: number }): Promise<RoutineRevision[]> {
    const rows = await this.db()
      .selectFrom('routineRevisions')
      .selectAll()
      .where('routineId', '=', routineId)
      .orderBy('number', 'desc')
      .limit(page.limit)
      .offset(page.offset ?? 0)
      .execute()
    return rows
  }

  async insertTrigger(t: NewRoutineTrigger): Promise<RoutineTrigger> {
    return this.db().insertInto('routineTriggers').values(t).returningAll().executeTakeFirstOrThrow()
  }

  async getTrigger(id: string): Promise<RoutineTrigger | undefined> {
    return this.db().selectFrom('routineTriggers').selectAll().where('id', '=', id).executeTakeFirst()
  }

  async getTriggerByPublicId(publicId: string): Promise<{ trigger: RoutineTrigger; concurrencyPolicy: Routine['concurrencyPolicy']; assigneeAgentId: string | null } | undefined> {
    const row = await this.db()
      .selectFrom('routineTriggers as t')
      .innerJoin('routines as r', 'r.id', 't.routineId')
      .selectAll('t')
      .select(['r.concurrencyPolicy as routineConcurrencyPolicy', 'r.assigneeAgentId as routineAssigneeAgentId'])
      .where('t.publicId', '=', publicId)
      .executeTakeFirst()
    if (!row) return undefined
    const { routineConcurrencyPolicy, routineAssigneeAgentId, ...t } = row
    return { trigger: t, concurrencyPolicy: routineConcurrencyPolicy, assigneeAgentId: routineAssigneeAgentId }
  }

  async listTriggers(routineId: string): Promise<RoutineTrigger[]> {
    return this.db().selectFrom('routineTriggers').selectAll().where('routineId', '=', routineId).orderBy('id').execute()
  }

  async updateTrigger(id: string, patch: RoutineTriggerPatch): Promise<RoutineTrigger | undefined> {
    const row = await this.db()
      .updateTable('routineTriggers')
      .set({ ...jsonColumns(patch, []), updatedAt: now() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst()
    return row
  }

  async deleteTrigger(id: string): Promise<boolean> {
    const r = await this.db().deleteFrom('routineTriggers').where('id', '=', id).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }

  async claimDueSchedules(at: Date, limit: number): Promise<DueSchedule[]> {
    // SKIP LOCKED: a node passes over schedules another node is firing right now; the caller
    // advances next_fire_at before committing, so nobody claims the same due time again.
    const { rows } = await sql<Row<'routineTriggers'> & { routineCatchUpPolicy: DueSchedule['catchUpPolicy'] }>`
      select t.*, r.catch_up_policy as routine_catch_up_policy
        from routine_triggers t
        join routines r on r.id = t.routine_id
       where t.kind = 'schedule' and t.enabled and t.next_fire_at <= ${at} and r.status = 'active'
       order by t.next_fire_at
       limit ${limit}
       for update of t skip locked`.execute(this.db())
    return rows.map(({ routineCatchUpPolicy, ...t }) => ({ trigger: t, catchUpPolicy: routineCatchUpPolicy }))
  }

  async insertRun(r: NewRoutineRun): Promise<{ run: RoutineRun; created: boolean }> {
    const row = await this.db()
      .insertInto('routineRuns')
      .values({ ...r, variables: json(r.variables), payload: r.payload === null ? null : json(r.payload) })
      .onConflict((oc) => oc.doNothing())
      .returningAll()
      .executeTakeFirst()
    if (row) return { run: row, created: true }
    let q = this.db().selectFrom('routineRuns').selectAll()
    if (r.idempotencyKey !== null) q = q.where('routineId', '=', r.routineId).where('idempotencyKey', '=', r.idempotencyKey)
    else if (r.triggerId !== null && r.scheduledFor !== null) q = q.where('triggerId', '=', r.triggerId).where('scheduledFor', '=', r.scheduledFor)
    else q = q.where('id', '=', r.id)
    const existing = await q.executeTakeFirstOrThrow()
    return { run: existing, created: false }
  }

  async insertRuns(runs: NewRoutineRun[]): Promise<RoutineRun[]> {
    if (!runs.length) return []
    const rows = await this.db()
      .insertInto('routineRuns')
      .values(runs.map((r) => ({ ...r, variables: json(r.variables), payload: r.payload === null ? null : json(r.payload) })))
      .onConflict((oc) => oc.doNothing())
      .returningAll()
      .execute()
    return rows
  }

  async advanceSchedules(updates: Array<{ id: string; nextFireAt: Date | null; lastFiredAt: Date }>): Promise<void> {
    if (!updates.length) return
    const values = sql.join(updates.map((u) => sql`(${u.id}::uuid, ${u.nextFireAt}::timestamptz, ${u.lastFiredAt}::timestamptz)`))
    await sql`
      update routine_triggers t set next_fire_at = v.next_fire_at, last_fired_at = v.last_fired_at, updated_at = now()
        from (values ${values}) as v(id, next_fire_at, last_fired_at)
       where t.id = v.id`.execute(this.db())
  }

  async runsByIdempotencyKeys(routineId: string, keys: string[]): Promise<RoutineRun[]> {
    if (!keys.length) return []
    return this.db().selectFrom('routineRuns').selectAll().where('routineId', '=', routineId).where('idempotencyKey', 'in', keys).execute()
  }

  async getRun(id: string, opts: { forUpdate?: boolean } = {}): Promise<RoutineRun | undefined> {
    let q = this.db().selectFrom('routineRuns').selectAll().where('id', '=', id)
    if (opts.forUpdate) q = q.forUpdate()
    return q.executeTakeFirst()
  }

  async updateRun(id: string, patch: RoutineRunPatch): Promise<RoutineRun | undefined> {
    return this.db()
      .updateTable('routineRuns')
      .set(jsonColumns(patch, ['variables', 'payload']))
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst()
  }

  async listRuns(routineId: string, page: { limit: number; offset?: number }): Promise<RoutineRun[]> {
    return this.db()
      .selectFrom('routineRuns')
      .selectAll()
      .where('routineId', '=', routineId)
      .orderBy('id', 'desc')
      .limit(page.limit)
      .offset(page.offset ?? 0)
      .execute()
  }

  async activeRun(routineId: string): Promise<RoutineRun | undefined> {
    // Walks the routine's runs newest first (routine_runs_routine) and stops at the first open issue.
    const row = await this.db()
      .selectFrom('routineRuns as rr')
      .innerJoin('issues as i', 'i.id', 'rr.issueId')
      .selectAll('rr')
      .where('rr.routineId', '=', routineId)
      .where('rr.status', '=', 'issue_created')
      .where('i.status', 'not in', ['done', 'cancelled'])
      .orderBy('rr.id', 'desc')
      .limit(1)
      .executeTakeFirst()
    return row
  }

  async envForRun(routineRunId: string): Promise<Record<string, EnvBinding> | null> {
    const row = await this.db().selectFrom('routineRuns as rr').innerJoin('routines as r', 'r.id', 'rr.routineId').select('r.env').where('rr.id', '=', routineRunId).executeTakeFirst()
    return row ? row.env : null
  }

  async runEnv(routineRunId: string): Promise<RoutineRunEnv | null> {
    const row = await this.db()
      .selectFrom('routineRuns as rr')
      .innerJoin('routines as r', 'r.id', 'rr.routineId')
      .select(['r.env', 'r.envWrittenBy', 'r.assigneeAgentId as routineAssigneeAgentId', 'r.createdByAgentId', 'rr.assigneeAgentId as runAssigneeAgentId', 'rr.requestedByAgentId'])
      .where('rr.id', '=', routineRunId)
      .executeTakeFirst()
    return row ?? null
  }

  async countCreatedByAgents(squadId: string): Promise<number> {
    const row = await this.db()
      .selectFrom('routines')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('squadId', '=', squadId)
      .where('createdByAgentId', 'is not', null)
      .where('status', '!=', 'archived')
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }
}
