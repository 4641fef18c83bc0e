import type { ColumnType, RawBuilder } from 'kysely'
import type { SkillFileEntry } from '@slaw/core'

/** Tables of migration 0004-skills (camelCase; see schema.ts). */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>
type CreatedAt = ColumnType<Date, Date | string | undefined, never>
type Json<T> = ColumnType<T, RawBuilder<unknown>, RawBuilder<unknown>>

export interface SkillsTable {
  id: string
  squadId: string
  key: string
  name: string
  description: string | null
  markdown: string
  files: Json<SkillFileEntry[]>
  sourceType: string
  trustLevel: string
  version: number
  contentHash: string
  createdAt: CreatedAt
  updatedAt: Timestamp
}

export interface TowerSkillCatalogTable {
  key: string
  slug: string
  name: string
  description: string | null
  category: string | null
  trustLevel: string
  version: number
  contentHash: string
  hasFiles: boolean
  metadata: Json<Record<string, unknown> | null> | null
  markdown: string
  files: Json<SkillFileEntry[]>
  updatedAt: Timestamp
  catalogVersion: number
  storedAt: Timestamp
}

export interface TowerSkillCatalogStateTable {
  id: number
  catalogVersion: number
  appliedAt: Timestamp
}

export interface SkillTables {
  skills: SkillsTable
  towerSkillCatalog: TowerSkillCatalogTable
  towerSkillCatalogState: TowerSkillCatalogStateTable
}
