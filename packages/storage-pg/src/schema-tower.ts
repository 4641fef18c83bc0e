import type { ColumnType, RawBuilder } from 'kysely'

/** Tables of migration 0003-tower (camelCase; see schema.ts). */
type Timestamp = ColumnType<Date, Date | string | RawBuilder<unknown> | undefined, Date | string | RawBuilder<unknown>>

interface TowerStateTable {
  key: string
  value: ColumnType<unknown, RawBuilder<unknown>, RawBuilder<unknown>>
  updatedAt: Timestamp
}

interface TowerLeasesTable {
  name: string
  holder: string
  expiresAt: Timestamp
}

export interface TowerTables {
  towerState: TowerStateTable
  towerLeases: TowerLeasesTable
}
