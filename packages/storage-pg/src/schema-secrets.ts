import type { ColumnType } from 'kysely'
import type { SecretAccessEvent, SecretProviderConfigRecord, SecretRecord, SecretVersionRecord } from '@slaw/core'
import type { Table, Timestamp } from './table.js'

/** Tables of migration 0006-secrets (derived from their records; see table.ts). */

type SecretProviderConfigsTable = Table<SecretProviderConfigRecord, { generated: 'isDefault'; json: 'config' }>

/** A timestamp that starts out null. */
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>
type SecretsTable = Table<SecretRecord, { generated: 'latestVersion'; json: 'providerMetadata' }, { lastResolvedAt: NullableTimestamp; lastRotatedAt: NullableTimestamp }>

type SecretVersionsTable = Table<SecretVersionRecord>

type SecretAccessEventsTable = Table<SecretAccessEvent>

interface SlawMasterKeyTable {
  id: number
  keyId: string
  updatedAt: Timestamp
}

export interface SecretTables {
  secretProviderConfigs: SecretProviderConfigsTable
  secrets: SecretsTable
  secretVersions: SecretVersionsTable
  secretAccessEvents: SecretAccessEventsTable
  slawMasterKey: SlawMasterKeyTable
}
