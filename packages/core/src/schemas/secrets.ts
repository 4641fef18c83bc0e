import { Type, type Static } from '@sinclair/typebox'
import { SecretAccessEventRecord, SecretProviderConfigRecord, SecretRecord, type SecretAccessEvent } from '../contracts/secrets.js'
import { secretKeyMaxLength, secretKeyPattern } from '../services/secrets/secrets.js'
import { Nullable, Uuid, iso, isoOrNull } from './common.js'

// Secrets and secret-provider configurations (docs/secrets.md). No schema here has a value field:
// a value goes in through create and rotate and never comes out.

const SecretKey = Type.String({ pattern: secretKeyPattern.source, maxLength: secretKeyMaxLength, description: 'letters, digits, "_", "." and "-"; derived from the name when omitted' })
const Name = Type.String({ minLength: 1, maxLength: 200 })
const Description = Nullable(Type.String({ maxLength: 10_000 }))
const ProviderType = Type.String({ minLength: 1, maxLength: 100, description: '`local_encrypted` or a registered plugin type such as `aws_secrets_manager`, `gcp_secret_manager`, `vault`' })
const Value = Type.String({ maxLength: 64 * 1024, description: 'the secret value (svc_managed only); never returned' })
const ExternalRef = Type.String({ minLength: 1, maxLength: 2048, description: 'provider-side reference (ARN, resource name, KV path)' })
const ProviderVersionRef = Nullable(Type.String({ maxLength: 512 }))
const Metadata = SecretRecord.properties.providerMetadata
const ManagedMode = SecretRecord.properties.managedMode
const Status = SecretRecord.properties.status
const ConfigId = Nullable(Type.String({ maxLength: 200 }))

export const CreateSecretBody = Type.Object(
  {
    name: Name,
    key: Type.Optional(SecretKey),
    provider: Type.Optional(ProviderType),
    providerConfigId: Type.Optional(ConfigId),
    managedMode: Type.Optional(ManagedMode),
    value: Type.Optional(Value),
    externalRef: Type.Optional(ExternalRef),
    description: Type.Optional(Description),
    providerVersionRef: Type.Optional(ProviderVersionRef),
    providerMetadata: Type.Optional(Metadata),
  },
  { additionalProperties: false },
)

export const UpdateSecretBody = Type.Object(
  {
    name: Type.Optional(Name),
    key: Type.Optional(SecretKey),
    status: Type.Optional(Status),
    providerConfigId: Type.Optional(ConfigId),
    description: Type.Optional(Description),
    externalRef: Type.Optional(ExternalRef),
    providerMetadata: Type.Optional(Metadata),
  },
  { additionalProperties: false },
)

export const RotateSecretBody = Type.Object(
  {
    value: Type.Optional(Value),
    externalRef: Type.Optional(ExternalRef),
    providerVersionRef: Type.Optional(ProviderVersionRef),
    providerConfigId: Type.Optional(ConfigId),
  },
  { additionalProperties: false },
)

export const AccessEventsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, description: 'default 100, clamped to 500' })),
    before: Type.Optional(Type.String({ maxLength: 64, description: 'an access event id: older events only' })),
  },
  { additionalProperties: false },
)

export const SecretSchema = Type.Object(SecretRecord.properties, { $id: 'Secret', title: 'Secret' })

export const SecretAccessEventSchema = Type.Object(Type.Omit(SecretAccessEventRecord, ['squadId']).properties, { $id: 'SecretAccessEvent', title: 'SecretAccessEvent' })

const Binding = Type.Object({
  consumerType: Type.String(),
  consumerId: Type.String(),
  consumerName: Type.String(),
  configPath: Type.String(),
  version: Type.Union([Type.Literal('latest'), Type.Integer()]),
})
export const SecretUsageSchema = Type.Object(
  {
    secretId: Uuid,
    bindings: Type.Array(Binding),
    consumers: Type.Array(Type.Object({ type: Type.String(), id: Type.String(), name: Type.String() })),
  },
  { $id: 'SecretUsage', title: 'SecretUsage' },
)

export const RemoteImportPreviewBody = Type.Object(
  {
    providerConfigId: Type.String({ maxLength: 200 }),
    query: Type.Optional(Type.String({ maxLength: 500, description: 'name filter' })),
    pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'default 50' })),
    nextToken: Type.Optional(Type.String({ maxLength: 4096 })),
  },
  { additionalProperties: false },
)
export const RemoteImportPreviewSchema = Type.Object({
  candidates: Type.Array(
    Type.Object({
      externalRef: Type.String(),
      name: Type.String(),
      key: Type.String(),
      status: Type.Union([Type.Literal('ready'), Type.Literal('duplicate'), Type.Literal('conflict')]),
      existingSecretId: Nullable(Uuid),
    }),
  ),
  nextToken: Nullable(Type.String()),
})

export const RemoteImportBody = Type.Object(
  {
    providerConfigId: Type.String({ maxLength: 200 }),
    secrets: Type.Array(
      Type.Object(
        {
          externalRef: ExternalRef,
          name: Type.Optional(Name),
          key: Type.Optional(SecretKey),
          description: Type.Optional(Description),
          providerVersionRef: Type.Optional(ProviderVersionRef),
          providerMetadata: Type.Optional(Metadata),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 100 },
    ),
  },
  { additionalProperties: false },
)
export const RemoteImportSchema = Type.Object({
  imported: Type.Integer(),
  skipped: Type.Integer(),
  errored: Type.Integer(),
  results: Type.Array(
    Type.Object({
      externalRef: Type.String(),
      status: Type.Union([Type.Literal('imported'), Type.Literal('skipped'), Type.Literal('errored')]),
      secretId: Nullable(Uuid),
      reason: Nullable(Type.String()),
    }),
  ),
})

// Provider configurations ------------------------------------------------------------------------

const Config = Type.Record(Type.String(), Type.Unknown(), { description: "non-sensitive settings only; keys limited to the provider's configKeys" })

export const CreateProviderConfigBody = Type.Object(
  { provider: ProviderType, name: Type.Optional(Name), config: Type.Optional(Config), isDefault: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
)
export const UpdateProviderConfigBody = Type.Object({ name: Type.Optional(Name), config: Type.Optional(Config) }, { additionalProperties: false })
export const DiscoveryPreviewBody = Type.Object({ provider: ProviderType, config: Type.Optional(Config) }, { additionalProperties: false })

export const ProviderConfigSchema = Type.Object(SecretProviderConfigRecord.properties, { $id: 'SecretProviderConfig', title: 'SecretProviderConfig' })

const healthFields = {
  provider: Type.String(),
  providerConfigId: Nullable(Uuid),
  name: Type.String(),
  ok: Type.Boolean(),
  message: Nullable(Type.String()),
}
export const ProviderHealthSchema = Type.Object(healthFields, { $id: 'SecretProviderHealth', title: 'SecretProviderHealth' })
export const DiscoveryPreviewSchema = Type.Object({
  ...healthFields,
  canListRemote: Type.Boolean(),
  sample: Type.Array(Type.Object({ externalRef: Type.String(), name: Type.String() })),
})
export const SupportedProvidersSchema = Type.Object({
  providers: Type.Array(Type.Object({ type: Type.String(), configKeys: Type.Array(Type.String()), canListRemote: Type.Boolean(), builtIn: Type.Boolean() })),
})
export const AggregateHealthSchema = Type.Object({ ok: Type.Boolean(), providers: Type.Array(ProviderHealthSchema) })

// Presenters list their fields rather than spread records: nothing about a secret is shown by accident.
export const presentSecret = (s: SecretRecord): Static<typeof SecretSchema> => ({
  id: s.id,
  squadId: s.squadId,
  key: s.key,
  name: s.name,
  provider: s.provider,
  providerConfigId: s.providerConfigId,
  status: s.status,
  managedMode: s.managedMode,
  externalRef: s.externalRef,
  latestVersion: s.latestVersion,
  description: s.description,
  providerMetadata: s.providerMetadata,
  lastResolvedAt: isoOrNull(s.lastResolvedAt),
  lastRotatedAt: isoOrNull(s.lastRotatedAt),
  createdAt: iso(s.createdAt),
  updatedAt: iso(s.updatedAt),
})

export const presentAccessEvent = (e: SecretAccessEvent): Static<typeof SecretAccessEventSchema> => ({
  id: e.id,
  secretId: e.secretId,
  version: e.version,
  provider: e.provider,
  actorType: e.actorType,
  actorId: e.actorId,
  consumerType: e.consumerType,
  consumerId: e.consumerId,
  configPath: e.configPath,
  issueId: e.issueId,
  heartbeatRunId: e.heartbeatRunId,
  outcome: e.outcome,
  errorCode: e.errorCode,
  createdAt: iso(e.createdAt),
})

export const presentProviderConfig = (c: SecretProviderConfigRecord): Static<typeof ProviderConfigSchema> => ({
  id: c.id,
  squadId: c.squadId,
  provider: c.provider,
  name: c.name,
  config: c.config,
  isDefault: c.isDefault,
  createdAt: iso(c.createdAt),
  updatedAt: iso(c.updatedAt),
})
