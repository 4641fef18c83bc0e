/**
 * Skills in storage: squad skills (authored locally, imported from a file, or installed from the
 * control tower's catalog) and the tower's catalog as this instance last pulled it.
 * Part of the Storage contract (storage.ts re-exports everything here).
 */

import type { CatalogSkill, SquadSkill } from '../records/skills.js'

// The records are defined in records/skills.ts.
export * from '../records/skills.js'

/** A squad skill without its content, as lists return it. */
export type SquadSkillSummary = Omit<SquadSkill, 'markdown' | 'files'> & { hasFiles: boolean }

export type NewSquadSkill = Omit<SquadSkill, 'createdAt' | 'updatedAt'>
export type SquadSkillPatch = Partial<Pick<SquadSkill, 'name' | 'description' | 'markdown' | 'files' | 'sourceType' | 'trustLevel' | 'version' | 'contentHash'>>

/** A catalog skill without its content. */
export type CatalogSkillSummary = Omit<CatalogSkill, 'markdown' | 'files'>

export type CatalogSkillWrite = Omit<CatalogSkill, 'storedAt'>
/** Descriptor fields of a catalog skill whose content did not change. */
export type CatalogDescriptorWrite = Omit<CatalogSkill, 'storedAt' | 'markdown' | 'files' | 'contentHash' | 'hasFiles'>

export interface SkillRepository {
  /** Throws `UniqueViolation('skills_squad_key')` when the squad already has the key. */
  insert(skill: NewSquadSkill): Promise<SquadSkill>
  get(id: string): Promise<SquadSkill | undefined>
  getByKey(squadId: string, key: string): Promise<SquadSkill | undefined>
  /** The squad's skills without content, by key. */
  list(squadId: string): Promise<SquadSkillSummary[]>
  /** The squad's skills with content, by key (exports). */
  listWithContent(squadId: string): Promise<SquadSkill[]>
  /** Every squad's copy of catalog skill `key` (sourceType `tower`). */
  listTowerCopies(key: string): Promise<SquadSkill[]>
  update(id: string, patch: SquadSkillPatch): Promise<SquadSkill | undefined>
  delete(id: string): Promise<boolean>

  /** The pulled catalog without content, by key. */
  catalogList(): Promise<CatalogSkillSummary[]>
  catalogGet(key: string): Promise<CatalogSkill | undefined>
  /** Inserts or replaces catalog skills (content included). */
  catalogPut(skills: CatalogSkillWrite[]): Promise<void>
  /** Updates descriptor fields of stored catalog skills, leaving content and hash as they are. */
  catalogPutDescriptors(skills: CatalogDescriptorWrite[]): Promise<void>
  catalogDelete(keys: string[]): Promise<void>
  /** The catalogVersion last applied, or null before the first pull. */
  catalogVersion(): Promise<number | null>
  setCatalogVersion(version: number): Promise<void>
}
