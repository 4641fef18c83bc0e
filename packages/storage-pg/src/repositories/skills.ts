import { sql, type Kysely } from 'kysely'
import type { CatalogDescriptorWrite, CatalogSkill, CatalogSkillSummary, CatalogSkillWrite, NewSquadSkill, SkillRepository, SquadSkill, SquadSkillPatch, SquadSkillSummary } from '@slaw/core'
import type { Database } from '../schema.js'
import { guardUnique, json, now } from '../sql-helpers.js'

const summaryColumns = ['id', 'squadId', 'key', 'name', 'description', 'sourceType', 'trustLevel', 'version', 'contentHash', 'createdAt', 'updatedAt'] as const
const catalogSummaryColumns = ['key', 'slug', 'name', 'description', 'category', 'trustLevel', 'version', 'contentHash', 'hasFiles', 'metadata', 'updatedAt', 'catalogVersion', 'storedAt'] as const

export class PgSkillRepository implements SkillRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(s: NewSquadSkill): Promise<SquadSkill> {
    return guardUnique(
      this.db()
        .insertInto('skills')
        .values({ ...s, files: json(s.files) })
        .returningAll()
        .executeTakeFirstOrThrow(),
    )
  }

  async get(id: string): Promise<SquadSkill | undefined> {
    return this.db().selectFrom('skills').selectAll().where('id', '=', id).executeTakeFirst()
  }

  async getByKey(squadId: string, key: string): Promise<SquadSkill | undefined> {
    return this.db().selectFrom('skills').selectAll().where('squadId', '=', squadId).where('key', '=', key).executeTakeFirst()
  }

  async list(squadId: string): Promise<SquadSkillSummary[]> {
    // Index skills_squad_key; content stays in the table.
    const rows = await this.db()
      .selectFrom('skills')
      .select([...summaryColumns, sql<boolean>`jsonb_array_length(files) > 0`.as('hasFiles')])
      .where('squadId', '=', squadId)
      .orderBy('key')
      .execute()
    return rows
  }

  async listWithContent(squadId: string): Promise<SquadSkill[]> {
    return this.db().selectFrom('skills').selectAll().where('squadId', '=', squadId).orderBy('key').execute()
  }

  async listTowerCopies(key: string): Promise<SquadSkill[]> {
    // Index skills_tower_key (partial: source_type = 'tower').
    return this.db().selectFrom('skills').selectAll().where('key', '=', key).where('sourceType', '=', 'tower').orderBy('squadId').execute()
  }

  async update(id: string, patch: SquadSkillPatch): Promise<SquadSkill | undefined> {
    const { files, ...rest } = patch
    const row = await this.db()
      .updateTable('skills')
      .set({ ...rest, ...(files !== undefined ? { files: json(files) } : {}), updatedAt: now() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst()
    return row
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db().deleteFrom('skills').where('id', '=', id).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }

  // The pulled tower catalog ---------------------------------------------------------------------

  async catalogList(): Promise<CatalogSkillSummary[]> {
    return this.db()
      .selectFrom('towerSkillCatalog')
      .select([...catalogSummaryColumns])
      .orderBy('key')
      .execute()
  }

  async catalogGet(key: string): Promise<CatalogSkill | undefined> {
    return this.db().selectFrom('towerSkillCatalog').selectAll().where('key', '=', key).executeTakeFirst()
  }

  async catalogPut(skills: CatalogSkillWrite[]): Promise<void> {
    // One statement per skill: a skill's content may be large, and a batch of them in one statement
    // would build one very large parameter list.
    for (const s of skills) {
      const values = { ...s, metadata: s.metadata === null ? null : json(s.metadata), files: json(s.files), storedAt: now() }
      const { key: _key, ...update } = values
      await this.db()
        .insertInto('towerSkillCatalog')
        .values(values)
        .onConflict((oc) => oc.column('key').doUpdateSet(update))
        .execute()
    }
  }

  async catalogPutDescriptors(skills: CatalogDescriptorWrite[]): Promise<void> {
    for (const { key, ...s } of skills) {
      await this.db()
        .updateTable('towerSkillCatalog')
        .set({ ...s, metadata: s.metadata === null ? null : json(s.metadata), storedAt: now() })
        .where('key', '=', key)
        .execute()
    }
  }

  async catalogDelete(keys: string[]): Promise<void> {
    if (!keys.length) return
    await this.db().deleteFrom('towerSkillCatalog').where('key', 'in', keys).execute()
  }

  async catalogVersion(): Promise<number | null> {
    const row = await this.db().selectFrom('towerSkillCatalogState').select('catalogVersion').where('id', '=', 1).executeTakeFirst()
    return row ? Number(row.catalogVersion) : null
  }

  async setCatalogVersion(version: number): Promise<void> {
    await this.db()
      .insertInto('towerSkillCatalogState')
      .values({ id: 1, catalogVersion: version, appliedAt: now() })
      .onConflict((oc) => oc.column('id').doUpdateSet({ catalogVersion: version, appliedAt: now() }))
      .execute()
  }
}
