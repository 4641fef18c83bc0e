import type { CatalogSkill, SquadSkill } from '@slaw/core'
import type { Table, Timestamp } from './table.js'

/** Tables of migration 0004-skills (derived from their records; see table.ts). */

type SkillsTable = Table<SquadSkill, { json: 'files' }>

type TowerSkillCatalogTable = Table<CatalogSkill, { json: 'metadata' | 'files' }, { storedAt: Timestamp }>

interface TowerSkillCatalogStateTable {
  id: number
  catalogVersion: number
  appliedAt: Timestamp
}

export interface SkillTables {
  skills: SkillsTable
  towerSkillCatalog: TowerSkillCatalogTable
  towerSkillCatalogState: TowerSkillCatalogStateTable
}
