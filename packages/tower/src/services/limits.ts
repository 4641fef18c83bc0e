import { sql } from 'kysely'
import type { LimitSpec } from '@slaw/core/ingest'
import { json } from '@slaw/storage-pg'
import type { TowerDb } from '../db/database.js'

/** A LimitSpec as an administrator writes it: the tower assigns the version. */
export type LimitInput = Omit<LimitSpec, 'version' | 'window' | 'warnPercent'> & Partial<Pick<LimitSpec, 'window' | 'warnPercent'>>

export interface EffectiveLimit {
  limit: LimitSpec
  /** `instance` when set for this instance, `fleet` when set for every instance. */
  scope: 'instance' | 'fleet'
}

/**
 * Fleet budget limits. Every write gets the next value of one tower-wide sequence as its version, so
 * versions only grow. The limit in effect for an instance is the newest of its own and the fleet-wide
 * one: whichever an administrator set last wins, and the effective version never goes backwards.
 * History is kept (append-only).
 */
export function limits(db: TowerDb) {
  return {
    /** Sets the limit of one instance, or of every instance when instancePk is null. */
    async set(instancePk: string | null, input: LimitInput): Promise<LimitSpec> {
      const spec = { costLimitCents: input.costLimitCents, tokenLimit: input.tokenLimit, window: input.window ?? 'calendar_month_utc', warnPercent: input.warnPercent ?? 80, mode: input.mode }
      const row = await db
        .insertInto('tower_limits')
        .values({ version: sql<number>`nextval('tower_limit_version')`, instance_pk: instancePk, spec: json(spec) })
        .returning('version')
        .executeTakeFirstOrThrow()
      return { ...spec, version: Number(row.version) }
    },

    /** The fleet-wide limit, or null when none was ever set. */
    async fleet(): Promise<LimitSpec | null> {
      const row = await db.selectFrom('tower_limits').select(['version', 'spec']).where('instance_pk', 'is', null).orderBy('version', 'desc').limit(1).executeTakeFirst()
      return row ? toSpec(row) : null
    },

    /** The limit in effect for an instance, or null. */
    async effective(instancePk: string): Promise<EffectiveLimit | null> {
      const row = await db
        .selectFrom('tower_limits')
        .select(['version', 'spec', 'instance_pk'])
        .where((eb) => eb.or([eb('instance_pk', '=', instancePk), eb('instance_pk', 'is', null)]))
        .orderBy('version', 'desc')
        .limit(1)
        .executeTakeFirst()
      return row ? { limit: toSpec(row), scope: row.instance_pk ? 'instance' : 'fleet' } : null
    },
  }
}

export function toSpec(row: { version: number | string; spec: unknown }): LimitSpec {
  return { ...(row.spec as Omit<LimitSpec, 'version'>), version: Number(row.version) }
}
