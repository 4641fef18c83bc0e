/**
 * Skills in storage: squad skills (authored locally, imported from a file, or installed from the
 * control tower's catalog) and the tower's catalog as this instance last pulled it.
 * Part of the Storage contract (storage.ts re-exports everything here).
 */

/** How a squad skill came to be: written through the API, read from a file, or copied from the tower. */
export type SkillSourceType = 'local' | 'import' | 'tower'

/** An inline file of a skill. `base64` content is binary; `utf8` content is text without NUL. */
export interface SkillFileEntry {
  path: string
  content: string
  encoding: 'utf8' | 'base64'
}

export interface SquadSkill {
  id: string
  squadId: string
  /** Unique within the squad; never changes. */
  key: string
  name: string
  description: string | null
  markdown: string
  files: SkillFileEntry[]
  sourceType: SkillSourceType
  trustLevel: string
  /** Grows by one on every change (for a tower copy: the catalog skill's own version). */
  version: number
  /** Hex SHA-256 of markdown and files (see `skillContentHash`). */
  contentHash: string
  createdAt: Date
  updatedAt: Date
}

/** A squad skill without its content, as lists return it. */
export type SquadSkillSummary = Omit<SquadSkill, 'markdown' | 'files'> & { hasFiles: boolean }

export type NewSquadSkill = Omit<SquadSkill, 'createdAt' | 'updatedAt'>
export type SquadSkillPatch = Partial<Pick<SquadSkill, 'name' | 'description' | 'markdown' | 'files' | 'sourceType' | 'trustLevel' | 'version' | 'contentHash'>>

/** One skill of the tower's catalog, with its content, as this instance stored it. */
export interface CatalogSkill {
  key: string
  slug: string
  name: string
  description: string | null
  category: string | null
  trustLevel: string
  /** The tower's per-skill version. */
  version: number
  contentHash: string
  hasFiles: boolean
  metadata: Record<string, unknown> | null
  markdown: string
  files: SkillFileEntry[]
  /** The descriptor's `updatedAt` on the tower. */
  updatedAt: Date
  /** The catalogVersion of the pull that last wrote this row. */
  catalogVersion: number
  /** When this instance last wrote the row. */
  storedAt: Date
}

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
