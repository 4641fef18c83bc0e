import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import type { Skill, SkillCatalog, SkillDescriptor, SkillFile } from '@slaw/core/ingest'
import { json } from '@slaw/storage-pg'
import type { TowerDb } from '../db/database.js'
import type { Selectable } from 'kysely'
import type { SkillsTable } from '../db/schema.js'
import { TowerError, notFound } from '../errors.js'

export interface SkillInput {
  name: string
  slug?: string | undefined
  description?: string | null | undefined
  category?: string | null | undefined
  trustLevel: string
  markdown: string
  files?: SkillFile[] | undefined
  metadata?: Record<string, unknown> | undefined
}

export type AdminSkill = Skill & { published: boolean }

/**
 * The content hash of a skill: hex SHA-256 over its markdown and files, in a canonical form
 * (files sorted by path, each as path, encoding and content), so the same content always hashes the same.
 */
export function contentHash(markdown: string, files: SkillFile[]): string {
  const canonical = JSON.stringify({
    markdown,
    files: [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)).map((f) => [f.path, f.encoding, f.content]),
  })
  return createHash('sha256').update(canonical).digest('hex')
}

/** JSON with object keys sorted, so values that jsonb stored (and reordered) compare equal. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  )
}

type SkillRow = Omit<Selectable<SkillsTable>, 'created_at'>

function toDescriptor(row: SkillRow): SkillDescriptor {
  const files = row.files ?? []
  return {
    key: row.key,
    slug: row.slug,
    name: row.name,
    description: row.description,
    category: row.category,
    trustLevel: row.trust_level,
    version: row.version,
    contentHash: row.content_hash,
    hasFiles: files.length > 0,
    ...(row.metadata ? { metadata: row.metadata } : {}),
    updatedAt: row.updated_at.toISOString(),
  }
}

function toSkill(row: SkillRow): Skill {
  return { ...toDescriptor(row), markdown: row.markdown, files: row.files ?? [] }
}

/**
 * The skill catalog. Publishing or unpublishing bumps the catalog version (one row, updated in the
 * same transaction, so concurrent publishes serialise and every change gets its own version); a
 * publish that changes nothing bumps nothing. A skill's own version grows whenever it changes.
 */
export function skills(db: TowerDb) {
  const columns = ['key', 'slug', 'name', 'description', 'category', 'trust_level', 'version', 'content_hash', 'markdown', 'files', 'metadata', 'published', 'updated_at'] as const

  return {
    async catalog(): Promise<SkillCatalog> {
      // The version first: a publish landing in between makes the answer look older than it is (the
      // instance pulls again later), never newer than its content.
      const catalog = await db.selectFrom('tower_catalog').select('version').where('id', '=', 1).executeTakeFirstOrThrow()
      const rows = await db.selectFrom('tower_skills').select(columns).where('published', '=', true).orderBy('key').execute()
      return { catalogVersion: Number(catalog.version), skills: rows.map(toDescriptor) }
    },

    /** One published skill with its content; 404 skill_not_found when unknown, unpublished or not a valid key. */
    async published(key: string): Promise<Skill> {
      const row = await db.selectFrom('tower_skills').select(columns).where('key', '=', key).where('published', '=', true).executeTakeFirst()
      if (!row) throw new TowerError('skill_not_found')
      return toSkill(row)
    },

    async list(): Promise<{ catalogVersion: number; skills: AdminSkill[] }> {
      const catalog = await db.selectFrom('tower_catalog').select('version').where('id', '=', 1).executeTakeFirstOrThrow()
      const rows = await db.selectFrom('tower_skills').select(columns).orderBy('key').execute()
      return { catalogVersion: Number(catalog.version), skills: rows.map((r) => ({ ...toSkill(r), published: r.published })) }
    },

    async publish(key: string, input: SkillInput): Promise<{ catalogVersion: number; skill: AdminSkill }> {
      const files = input.files ?? []
      const hash = contentHash(input.markdown, files)
      const next = {
        slug: input.slug ?? key,
        name: input.name,
        description: input.description ?? null,
        category: input.category ?? null,
        trust_level: input.trustLevel,
        content_hash: hash,
        markdown: input.markdown,
        files: json(files),
        metadata: input.metadata ? json(input.metadata) : null,
      }
      return db.transaction().execute(async (trx) => {
        // Lock the catalog row first: publishes and unpublishes serialise here.
        await trx.selectFrom('tower_catalog').select('version').where('id', '=', 1).forUpdate().executeTakeFirstOrThrow()
        const current = await trx.selectFrom('tower_skills').select(columns).where('key', '=', key).executeTakeFirst()
        const unchanged =
          current !== undefined &&
          current.published &&
          current.slug === next.slug &&
          current.name === next.name &&
          current.description === next.description &&
          current.category === next.category &&
          current.trust_level === next.trust_level &&
          current.content_hash === next.content_hash &&
          canonicalJson(current.metadata ?? null) === canonicalJson(input.metadata ?? null)
        let row = current
        if (!unchanged) {
          row = await trx
            .insertInto('tower_skills')
            .values({ key, ...next, version: 1, published: true })
            .onConflict((oc) =>
              oc.column('key').doUpdateSet((eb) => ({
                ...next,
                version: sql`${eb.ref('tower_skills.version')} + 1`,
                published: true,
                updated_at: sql`now()`,
              })),
            )
            .returning(columns)
            .executeTakeFirstOrThrow()
          await trx
            .updateTable('tower_catalog')
            .set((eb) => ({ version: sql`${eb.ref('version')} + 1` }))
            .where('id', '=', 1)
            .execute()
        }
        const catalog = await trx.selectFrom('tower_catalog').select('version').where('id', '=', 1).executeTakeFirstOrThrow()
        return { catalogVersion: Number(catalog.version), skill: { ...toSkill(row!), published: true } }
      })
    },

    /** Takes a skill out of the catalog (it stays stored and can be published again). */
    async unpublish(key: string): Promise<{ catalogVersion: number }> {
      return db.transaction().execute(async (trx) => {
        await trx.selectFrom('tower_catalog').select('version').where('id', '=', 1).forUpdate().executeTakeFirstOrThrow()
        const current = await trx.selectFrom('tower_skills').select('published').where('key', '=', key).executeTakeFirst()
        if (!current) throw notFound('Skill')
        if (current.published) {
          await trx.updateTable('tower_skills').set({ published: false, updated_at: sql`now()` }).where('key', '=', key).execute()
          await trx
            .updateTable('tower_catalog')
            .set((eb) => ({ version: sql`${eb.ref('version')} + 1` }))
            .where('id', '=', 1)
            .execute()
        }
        const catalog = await trx.selectFrom('tower_catalog').select('version').where('id', '=', 1).executeTakeFirstOrThrow()
        return { catalogVersion: Number(catalog.version) }
      })
    },
  }
}
