/**
 * Secrets in storage: secret metadata, its versions (each holding the provider's reference, for
 * `local_encrypted` the AES-GCM envelope), the access audit trail, provider configurations, the
 * instance's master key id, and two generic primitives other modules extend through registries
 * (encrypted columns for master-key rotation, JSON binding columns for usage).
 * Part of the Storage contract (storage.ts re-exports everything here).
 */

import type { SecretAccessEvent, SecretProviderConfigRecord, SecretRecord, SecretVersionRecord } from '../records/secrets.js'

// The records are defined in records/secrets.ts.
export * from '../records/secrets.js'

export type NewSecret = Omit<SecretRecord, 'lastResolvedAt' | 'lastRotatedAt' | 'createdAt' | 'updatedAt'>
export type SecretPatch = Partial<Pick<SecretRecord, 'name' | 'key' | 'status' | 'providerConfigId' | 'description' | 'externalRef' | 'providerMetadata' | 'lastRotatedAt'>>
export type NewSecretVersion = Omit<SecretVersionRecord, 'createdAt'>
export type NewSecretAccessEvent = Omit<SecretAccessEvent, 'createdAt'>
export type NewSecretProviderConfig = Omit<SecretProviderConfigRecord, 'createdAt' | 'updatedAt'>
export type SecretProviderConfigPatch = Partial<Pick<SecretProviderConfigRecord, 'name' | 'config'>>

/**
 * A column holding master-key envelopes (`MasterKey.encrypt`), for rotation. `aadColumns` are read
 * with each row and handed to the registry entry's `aad(row)`; table and column names are SQL
 * identifiers in snake_case.
 */
export interface EncryptedColumnRef {
  table: string
  /** The primary key's columns; a row is rewritten by them. */
  idColumns: readonly string[]
  column: string
  aadColumns: readonly string[]
  /** Extra equality filter, e.g. `{ provider: 'local_encrypted' }`. */
  where?: Readonly<Record<string, string>>
  /** A column that records the key id next to the envelope, kept in step on rewrite. */
  keyIdColumn?: string
}
export interface EncryptedRow {
  id: Record<string, unknown>
  envelope: string
  aad: Record<string, unknown>
}

/**
 * A JSON column holding env bindings (`{NAME: binding}`) at `path` inside it, for a secret's usage.
 * The table must have `id`, `squad_id` and the `nameColumn`.
 */
export interface BindingColumnRef {
  table: string
  column: string
  /** Keys leading to the env object inside the column, e.g. `['env']` for `adapter_config -> 'env'`. */
  path: readonly string[]
  nameColumn: string
}
export interface BindingHit {
  id: string
  name: string
  envName: string
  version: 'latest' | number
}

export interface SecretRepository {
  /** Throws `UniqueViolation('secrets_squad_key')` when a live secret of the squad has the key. */
  insert(secret: NewSecret): Promise<SecretRecord>
  get(id: string): Promise<SecretRecord | undefined>
  /** The squad's secrets that are not deleted, by key. */
  list(squadId: string): Promise<SecretRecord[]>
  update(id: string, patch: SecretPatch): Promise<SecretRecord | undefined>
  /**
   * Reserves the next version atomically (the row lock serialises concurrent rotations): returns
   * the new `latestVersion`, or undefined for an unknown secret.
   */
  bumpVersion(id: string, at: Date): Promise<number | undefined>
  insertVersion(version: NewSecretVersion): Promise<SecretVersionRecord>
  getVersion(secretId: string, version: number): Promise<SecretVersionRecord | undefined>
  /** Corrects a version's reference or configuration (an external reference's latest version, on PATCH). */
  updateVersion(secretId: string, version: number, patch: Partial<Pick<SecretVersionRecord, 'ref' | 'providerConfigId'>>): Promise<void>
  /** The secret and the asked version in one round trip (the resolve hot path). */
  getForResolve(id: string, version: 'latest' | number): Promise<{ secret: SecretRecord; version: SecretVersionRecord | undefined } | undefined>
  listVersions(secretId: string): Promise<SecretVersionRecord[]>
  /** Overwrites the `local_encrypted` envelopes of a secret (revocation): its values are gone for good. */
  dropLocalValues(secretId: string): Promise<void>
  /** Live secrets of the squad with one of these keys, or with this external reference under a config. */
  findByKeys(squadId: string, keys: string[]): Promise<SecretRecord[]>
  findByExternalRefs(squadId: string, providerConfigId: string, refs: string[]): Promise<SecretRecord[]>
  /** Writes an access event and, on success, the secret's `lastResolvedAt`, in one statement. */
  recordAccess(event: NewSecretAccessEvent, resolvedAt: Date | null): Promise<void>
  listAccessEvents(secretId: string, page: { limit: number; before?: string }): Promise<SecretAccessEvent[]>

  insertProviderConfig(config: NewSecretProviderConfig): Promise<SecretProviderConfigRecord>
  getProviderConfig(id: string): Promise<SecretProviderConfigRecord | undefined>
  listProviderConfigs(squadId: string): Promise<SecretProviderConfigRecord[]>
  updateProviderConfig(id: string, patch: SecretProviderConfigPatch): Promise<SecretProviderConfigRecord | undefined>
  /** Makes this config the squad's only default. */
  setDefaultProviderConfig(squadId: string, id: string): Promise<void>
  deleteProviderConfig(id: string): Promise<boolean>
  /** Live secrets that use the config. */
  countSecretsUsingConfig(id: string): Promise<number>

  /** The master key id the instance's data is encrypted under, or undefined before the first start. */
  getMasterKeyId(): Promise<string | undefined>
  /** Records the key id unless one is recorded already; returns the recorded one. */
  claimMasterKeyId(keyId: string): Promise<string>
  setMasterKeyId(keyId: string): Promise<void>

  /**
   * Up to `limit` rows of an encrypted column whose envelope names `keyId` (rewriting a row under
   * another key takes it out of the next scan). An absent table or column yields none.
   */
  scanEncrypted(ref: EncryptedColumnRef, keyId: string, limit: number): Promise<EncryptedRow[]>
  /** Replaces one row's envelope (and its key id column, when the ref names one). */
  writeEncrypted(ref: EncryptedColumnRef, id: Record<string, unknown>, envelope: string, keyId: string): Promise<void>
  /** Rows of the squad whose bindings name `secretId` (a `secret_ref` binding). Absent tables yield none. */
  findBindings(ref: BindingColumnRef, squadId: string, secretId: string): Promise<BindingHit[]>
}
