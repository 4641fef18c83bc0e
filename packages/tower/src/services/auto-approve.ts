import { randomUUID } from 'node:crypto'
import type { InstanceIdentity } from '@slaw/core/ingest'
import { json } from '@slaw/storage-pg'
import type { TowerDb } from '../db/database.js'
import { notFound } from '../errors.js'
import { isUuid } from './keys.js'

/**
 * An auto-approve rule: an enrollment that matches one becomes active at once.
 * - `all`: every enrollment (a trusted network, or together with an enrollment secret);
 * - `hostname`: a glob over the hostname, `*` any run of characters and `?` one, case-insensitive;
 * - `machine_ids`: a list of machine ids.
 * machineId and hostname are asserted by the instance itself: rules are a convenience, not a trust
 * boundary. Pair them with an enrollment secret on an untrusted network.
 */
export type AutoApproveRuleInput =
  | { kind: 'all'; note?: string | undefined }
  | { kind: 'hostname'; pattern: string; note?: string | undefined }
  | { kind: 'machine_ids'; machineIds: string[]; note?: string | undefined }

export type AutoApproveRule = AutoApproveRuleInput & { id: string; source: 'config' | 'admin'; createdAt: string | null }

function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.')
  return new RegExp(`^${body}$`, 'i')
}

function ruleMatches(rule: AutoApproveRuleInput, instance: Pick<InstanceIdentity, 'hostname' | 'machineId'>): boolean {
  switch (rule.kind) {
    case 'all':
      return true
    case 'hostname':
      return globToRegExp(rule.pattern).test(instance.hostname)
    case 'machine_ids':
      return rule.machineIds.includes(instance.machineId)
  }
}

/** Rules given to createTower() (not stored, not deletable through the API) and rules kept in the database. */
export function autoApproveRules(db: TowerDb, configured: AutoApproveRuleInput[]) {
  const fromConfig: AutoApproveRule[] = configured.map((rule, i) => ({ ...rule, id: `config-${i}`, source: 'config', createdAt: null }))

  async function list(): Promise<AutoApproveRule[]> {
    const rows = await db.selectFrom('tower_auto_approve_rules').selectAll().orderBy('created_at').orderBy('id').execute()
    const stored = rows.map((row): AutoApproveRule => {
      const base = { id: row.id, source: 'admin' as const, createdAt: row.created_at.toISOString(), ...(row.note ? { note: row.note } : {}) }
      if (row.kind === 'hostname') return { ...base, kind: 'hostname', pattern: row.pattern ?? '' }
      if (row.kind === 'machine_ids') return { ...base, kind: 'machine_ids', machineIds: (row.machine_ids as unknown as string[]) ?? [] }
      return { ...base, kind: 'all' }
    })
    return [...fromConfig, ...stored]
  }

  return {
    list,

    /** The first rule matching the instance, or null. */
    async match(instance: Pick<InstanceIdentity, 'hostname' | 'machineId'>): Promise<AutoApproveRule | null> {
      return (await list()).find((rule) => ruleMatches(rule, instance)) ?? null
    },

    async create(input: AutoApproveRuleInput): Promise<AutoApproveRule> {
      const id = randomUUID()
      const row = await db
        .insertInto('tower_auto_approve_rules')
        .values({
          id,
          kind: input.kind,
          pattern: input.kind === 'hostname' ? input.pattern : null,
          machine_ids: input.kind === 'machine_ids' ? json(input.machineIds) : null,
          note: input.note ?? null,
        })
        .returning('created_at')
        .executeTakeFirstOrThrow()
      return { ...input, id, source: 'admin', createdAt: row.created_at.toISOString() }
    },

    async remove(id: string): Promise<void> {
      const result = isUuid(id) ? await db.deleteFrom('tower_auto_approve_rules').where('id', '=', id).executeTakeFirst() : null
      if (!result || result.numDeletedRows === 0n) throw notFound('Auto-approve rule')
    },
  }
}
export type AutoApproveRules = ReturnType<typeof autoApproveRules>
