import { Type, type StaticDecode } from '@sinclair/typebox'
import { DateTime, JsonObject, Nullable, OneOf, Uuid } from './fields.js'

// Records of secrets: metadata, versions (holding the provider's reference), access events, and
// provider configurations. A secret's value is in none of them.

export const secretStatuses = ['active', 'disabled', 'archived', 'deleted'] as const
export type SecretStatus = (typeof secretStatuses)[number]
export const secretManagedModes = ['svc_managed', 'external_reference'] as const
export type SecretManagedMode = (typeof secretManagedModes)[number]

export const SecretRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  /** Unique among the squad's secrets that are not deleted. */
  key: Type.String(),
  name: Type.String(),
  provider: Type.String(),
  providerConfigId: Nullable(Uuid),
  status: OneOf(secretStatuses),
  managedMode: OneOf(secretManagedModes),
  externalRef: Nullable(Type.String()),
  latestVersion: Type.Integer(),
  description: Nullable(Type.String()),
  providerMetadata: Nullable(JsonObject()),
  lastResolvedAt: Nullable(DateTime),
  lastRotatedAt: Nullable(DateTime),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type SecretRecord = StaticDecode<typeof SecretRecord>

export const SecretVersionRecord = Type.Object({
  secretId: Uuid,
  version: Type.Integer(),
  provider: Type.String(),
  providerConfigId: Nullable(Uuid),
  /** The provider's reference (for `local_encrypted`: the envelope); never shown to anyone. */
  ref: Type.String(),
  /** The master key id a `local_encrypted` envelope was written under; null for other providers. */
  keyId: Nullable(Type.String()),
  providerVersionRef: Nullable(Type.String()),
  createdAt: DateTime,
})
export type SecretVersionRecord = StaticDecode<typeof SecretVersionRecord>

export const SecretAccessEventRecord = Type.Object({
  id: Uuid,
  secretId: Uuid,
  squadId: Uuid,
  /** The version asked for, once known (null when the secret could not be read at all). */
  version: Nullable(Type.Integer()),
  provider: Type.String(),
  actorType: Type.String(),
  actorId: Type.String(),
  consumerType: Type.String(),
  consumerId: Type.String(),
  configPath: Nullable(Type.String()),
  issueId: Nullable(Uuid),
  heartbeatRunId: Nullable(Uuid),
  outcome: OneOf(['success', 'failure']),
  errorCode: Nullable(Type.String()),
  createdAt: DateTime,
})
export type SecretAccessEvent = StaticDecode<typeof SecretAccessEventRecord>

export const SecretProviderConfigRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  provider: Type.String(),
  name: Type.String(),
  config: JsonObject(),
  isDefault: Type.Boolean(),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type SecretProviderConfigRecord = StaticDecode<typeof SecretProviderConfigRecord>
