import type { ColumnType, RawBuilder } from 'kysely'

/** Tables of migration 0006-secrets (camelCase; see schema.ts). */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>
type CreatedAt = ColumnType<Date, Date | string | undefined, never>
type Json<T> = ColumnType<T, RawBuilder<unknown>, RawBuilder<unknown>>

export interface SecretProviderConfigsTable {
  id: string
  squadId: string
  provider: string
  name: string
  config: Json<Record<string, unknown>>
  isDefault: ColumnType<boolean, boolean | undefined, boolean>
  createdAt: CreatedAt
  updatedAt: Timestamp
}

export interface SecretsTable {
  id: string
  squadId: string
  key: string
  name: string
  provider: string
  providerConfigId: string | null
  status: string
  managedMode: string
  externalRef: string | null
  latestVersion: ColumnType<number, number | undefined, number>
  description: string | null
  providerMetadata: Json<Record<string, unknown> | null> | null
  lastResolvedAt: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>
  lastRotatedAt: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>
  createdAt: CreatedAt
  updatedAt: Timestamp
}

export interface SecretVersionsTable {
  secretId: string
  version: number
  provider: string
  providerConfigId: string | null
  ref: string
  keyId: string | null
  providerVersionRef: string | null
  createdAt: CreatedAt
}

export interface SecretAccessEventsTable {
  id: string
  secretId: string
  squadId: string
  version: number | null
  provider: string
  actorType: string
  actorId: string
  consumerType: string
  consumerId: string
  configPath: string | null
  issueId: string | null
  heartbeatRunId: string | null
  outcome: string
  errorCode: string | null
  createdAt: CreatedAt
}

export interface SlawMasterKeyTable {
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
