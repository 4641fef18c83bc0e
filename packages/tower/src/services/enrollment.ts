import { randomUUID } from 'node:crypto'
import { sql, type Transaction } from 'kysely'
import type { EnrollmentState, EnrollRequest } from '@slaw/core/ingest'
import type { TowerDb } from '../db/database.js'
import type { TowerDatabase } from '../db/schema.js'
import { TowerError, notFound } from '../errors.js'
import type { AutoApproveRules } from './auto-approve.js'
import { hashKey, isUuid, newApiKey, secretsEqual } from './keys.js'
import { decodeCursor, pageSize, toPage, type Page, type PageQuery } from './pagination.js'

export interface EnrollOutcome {
  enrollmentId: string
  state: EnrollmentState
  /** Present exactly once in the life of an enrollment: on the call that minted the key. */
  apiKey?: string
}

export interface EnrollmentView {
  id: string
  state: EnrollmentState
  instance: { id: string; machineId: string; instanceId: string; hostname: string; os: string; slawVersion: string }
  keyDelivered: boolean
  decidedBy: string | null
  decidedAt: string | null
  reason: string | null
  createdAt: string
}

type Db = TowerDb | Transaction<TowerDatabase>

/**
 * Key delivery: a key is minted when it is handed out, never before, and only its SHA-256 is stored.
 * The conditional UPDATE (`api_key_hash is null`) makes the hand-out happen once even when two polls
 * race: the loser sees the state without a key. The plaintext never touches the database or a log.
 */
async function mintKey(db: Db, enrollmentId: string): Promise<string | null> {
  const apiKey = newApiKey()
  const minted = await db
    .updateTable('tower_enrollments')
    .set({ api_key_hash: hashKey(apiKey), key_delivered_at: sql`now()`, updated_at: sql`now()` })
    .where('id', '=', enrollmentId)
    .where('state', '=', 'active')
    .where('api_key_hash', 'is', null)
    .returning('id')
    .executeTakeFirst()
  return minted ? apiKey : null
}

export interface EnrollmentOptions {
  /** When set, POST /enroll must present it (body `enrollmentSecret` or header `x-enrollment-secret`). */
  enrollmentSecret?: string | undefined
}

export function enrollments(db: TowerDb, rules: AutoApproveRules, options: EnrollmentOptions) {
  async function get(enrollmentId: string): Promise<EnrollmentView> {
    const row = isUuid(enrollmentId) ? await enrollmentQuery().where('e.id', '=', enrollmentId).executeTakeFirst() : undefined
    if (!row) throw notFound('Enrollment')
    return toView(row)
  }

  return {
    /**
     * POST /enroll. Re-enrolling the same (machineId, instanceId):
     * - pending: the same enrollment again (its metadata refreshed), 202;
     * - active whose key was never handed out (approved while the instance was away): the key now, 200;
     * - active whose key was handed out: a key-recovery request, a new enrollment that an auto-approve
     *   rule or an administrator approves; the old key keeps working until then and stops (403
     *   enrollment_revoked) once the new one is active;
     * - rejected or revoked: 403 enrollment_rejected or enrollment_revoked, and no rule approves it;
     *   an administrator may still approve that enrollment, after which enrolling hands out a key.
     */
    async enroll(body: EnrollRequest, headerSecret: string | undefined): Promise<EnrollOutcome> {
      if (options.enrollmentSecret !== undefined) {
        const given = body.enrollmentSecret ?? headerSecret
        if (!given) throw new TowerError('enrollment_secret_required')
        if (!secretsEqual(given, options.enrollmentSecret)) throw new TowerError('enrollment_secret_required', 'The enrollment secret does not match.')
      }
      const rule = await rules.match(body.instance)
      const identity = body.instance
      return db.transaction().execute(async (trx) => {
        // Insert or refresh the identity. The row lock this takes serialises concurrent enrolls of one identity.
        const instance = await trx
          .insertInto('tower_instances')
          .values({
            id: randomUUID(),
            machine_id: identity.machineId,
            instance_id: identity.instanceId,
            hostname: identity.hostname,
            os: identity.os,
            slaw_version: identity.slawVersion,
            report_issue_titles: body.capabilities?.reportIssueTitles ?? true,
            live_stream: body.capabilities?.liveStream ?? false,
          })
          .onConflict((oc) =>
            oc.columns(['machine_id', 'instance_id']).doUpdateSet((eb) => ({
              hostname: eb.ref('excluded.hostname'),
              os: eb.ref('excluded.os'),
              slaw_version: eb.ref('excluded.slaw_version'),
              report_issue_titles: eb.ref('excluded.report_issue_titles'),
              live_stream: eb.ref('excluded.live_stream'),
              updated_at: sql`now()`,
            })),
          )
          .returning('id')
          .executeTakeFirstOrThrow()

        const latest = await trx
          .selectFrom('tower_enrollments')
          .select(['id', 'state', 'api_key_hash'])
          .where('instance_pk', '=', instance.id)
          .orderBy('created_at', 'desc')
          .orderBy('id', 'desc')
          .limit(1)
          .executeTakeFirst()

        if (latest?.state === 'pending') return { enrollmentId: latest.id, state: 'pending' }
        if (latest?.state === 'rejected') throw new TowerError('enrollment_rejected')
        if (latest?.state === 'revoked') throw new TowerError('enrollment_revoked')
        if (latest?.state === 'active' && latest.api_key_hash === null) {
          const apiKey = await mintKey(trx, latest.id)
          if (apiKey) return { enrollmentId: latest.id, state: 'active', apiKey }
        }

        const id = randomUUID()
        if (!rule) {
          await trx.insertInto('tower_enrollments').values({ id, instance_pk: instance.id, state: 'pending' }).execute()
          return { enrollmentId: id, state: 'pending' }
        }
        // Auto-approved; a key recovery supersedes the instance's previous key.
        await trx
          .updateTable('tower_enrollments')
          .set({ state: 'revoked', reason: 'superseded', updated_at: sql`now()` })
          .where('instance_pk', '=', instance.id)
          .where('state', '=', 'active')
          .execute()
        const apiKey = newApiKey()
        await trx
          .insertInto('tower_enrollments')
          .values({
            id,
            instance_pk: instance.id,
            state: 'active',
            api_key_hash: hashKey(apiKey),
            key_delivered_at: sql`now()`,
            decided_by: `rule:${rule.id}`,
            decided_at: sql`now()`,
          })
          .execute()
        return { enrollmentId: id, state: 'active', apiKey }
      })
    },

    /** POST /enroll/poll. The key is handed out by the first poll after approval, and never again. */
    async poll(enrollmentId: string): Promise<EnrollOutcome> {
      const row = isUuid(enrollmentId) ? await db.selectFrom('tower_enrollments').select(['id', 'state', 'api_key_hash']).where('id', '=', enrollmentId).executeTakeFirst() : undefined
      if (!row) throw new TowerError('enrollment_not_found')
      if (row.state === 'active' && row.api_key_hash === null) {
        const apiKey = await mintKey(db, row.id)
        if (apiKey) return { enrollmentId: row.id, state: 'active', apiKey }
      }
      return { enrollmentId: row.id, state: row.state }
    },

    /**
     * Approves a pending enrollment, or reverses a rejection or revocation of an instance's latest
     * enrollment. The key is minted when the instance next polls or enrolls. Approving an active one
     * changes nothing.
     */
    async approve(enrollmentId: string): Promise<EnrollmentView> {
      await db.transaction().execute(async (trx) => {
        const row = await lockEnrollment(trx, enrollmentId)
        if (row.state === 'active') return
        if (row.state !== 'pending') {
          const latest = await trx
            .selectFrom('tower_enrollments')
            .select('id')
            .where('instance_pk', '=', row.instance_pk)
            .orderBy('created_at', 'desc')
            .orderBy('id', 'desc')
            .limit(1)
            .executeTakeFirstOrThrow()
          if (latest.id !== row.id) throw new TowerError('invalid_state', 'A newer enrollment exists for this instance; decide that one.')
        }
        await trx
          .updateTable('tower_enrollments')
          .set({ state: 'revoked', reason: 'superseded', updated_at: sql`now()` })
          .where('instance_pk', '=', row.instance_pk)
          .where('state', '=', 'active')
          .execute()
        await trx
          .updateTable('tower_enrollments')
          .set({ state: 'active', api_key_hash: null, key_delivered_at: null, decided_by: 'admin', decided_at: sql`now()`, reason: null, updated_at: sql`now()` })
          .where('id', '=', row.id)
          .execute()
      })
      return get(enrollmentId)
    },

    /** Rejects a pending enrollment: polling shows `rejected`, enrolling again answers 403 enrollment_rejected. */
    async reject(enrollmentId: string): Promise<EnrollmentView> {
      await decide(enrollmentId, 'pending', 'rejected', 'Only a pending enrollment can be rejected; revoke an active one.')
      return get(enrollmentId)
    },

    /** Revokes an active enrollment: its key answers 403 enrollment_revoked from now on. */
    async revoke(enrollmentId: string): Promise<EnrollmentView> {
      await decide(enrollmentId, 'active', 'revoked', 'Only an active enrollment can be revoked; reject a pending one.')
      return get(enrollmentId)
    },

    get,

    /** Newest first; filter by state. */
    async list(query: PageQuery & { state?: EnrollmentState | undefined }): Promise<Page<EnrollmentView>> {
      const size = pageSize(query)
      const after = decodeCursor(query.cursor, ['string', 'string'])
      let q = enrollmentQuery()
      if (query.state) q = q.where('e.state', '=', query.state)
      if (after) q = q.where(sql<boolean>`(e.created_at, e.id) < (${after[0]}::timestamptz, ${after[1]}::uuid)`)
      const rows = await q
        .orderBy('e.created_at', 'desc')
        .orderBy('e.id', 'desc')
        .limit(size + 1)
        .execute()
      return toPage(rows, size, toView, (r) => [r.created_at.toISOString(), r.id])
    },
  }

  async function decide(enrollmentId: string, from: EnrollmentState, to: EnrollmentState, refusal: string): Promise<void> {
    await db.transaction().execute(async (trx) => {
      const row = await lockEnrollment(trx, enrollmentId)
      if (row.state === to) return
      if (row.state !== from) throw new TowerError('invalid_state', refusal)
      await trx.updateTable('tower_enrollments').set({ state: to, decided_by: 'admin', decided_at: sql`now()`, updated_at: sql`now()` }).where('id', '=', row.id).execute()
    })
  }

  function enrollmentQuery() {
    return db
      .selectFrom('tower_enrollments as e')
      .innerJoin('tower_instances as i', 'i.id', 'e.instance_pk')
      .select([
        'e.id',
        'e.state',
        'e.key_delivered_at',
        'e.decided_by',
        'e.decided_at',
        'e.reason',
        'e.created_at',
        'i.id as instance_pk',
        'i.machine_id',
        'i.instance_id',
        'i.hostname',
        'i.os',
        'i.slaw_version',
      ])
  }
}

async function lockEnrollment(trx: Transaction<TowerDatabase>, enrollmentId: string) {
  const row = isUuid(enrollmentId) ? await trx.selectFrom('tower_enrollments').select(['id', 'state', 'instance_pk']).where('id', '=', enrollmentId).forUpdate().executeTakeFirst() : undefined
  if (!row) throw notFound('Enrollment')
  return row
}

function toView(row: {
  id: string
  state: EnrollmentState
  key_delivered_at: Date | null
  decided_by: string | null
  decided_at: Date | null
  reason: string | null
  created_at: Date
  instance_pk: string
  machine_id: string
  instance_id: string
  hostname: string
  os: string
  slaw_version: string
}): EnrollmentView {
  return {
    id: row.id,
    state: row.state,
    instance: { id: row.instance_pk, machineId: row.machine_id, instanceId: row.instance_id, hostname: row.hostname, os: row.os, slawVersion: row.slaw_version },
    keyDelivered: row.key_delivered_at !== null,
    decidedBy: row.decided_by,
    decidedAt: row.decided_at ? row.decided_at.toISOString() : null,
    reason: row.reason,
    createdAt: row.created_at.toISOString(),
  }
}
