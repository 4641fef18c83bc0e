// Public surface of @slaw/core. Everything else is internal.
export { createInstance } from './create-instance.js'
export type { InstanceOptions, ListenOptions, SlawInstance } from './create-instance.js'

export type * from './contracts/storage.js'
export { UniqueViolation } from './contracts/storage.js'
export { StorageUnavailableError } from './contracts/storage.js'
export { compareEventCursors, isEventCursor } from './contracts/storage.js'
export type { LockProvider } from './contracts/lock-provider.js'
export { LockUnavailableError } from './contracts/lock-provider.js'
export type { SecretProvider, SecretProviderErrorCode } from './contracts/secret-provider.js'
export { SecretProviderError } from './contracts/secret-provider.js'
export type {
  AgentAdapter,
  AdapterWakeInput,
  AdapterWakeResult,
  AdapterUsage,
  RunLiveness,
  AdapterSession,
  AdapterWakeContext,
  AdapterOutputChunk,
  AdapterEnvironmentCheck,
  AdapterEnvironmentReport,
  AdapterBillingType,
  CostStatus,
  AdapterErrorCode,
} from './contracts/agent-adapter.js'
export {
  defineAgentAdapter,
  adapterConfigProblems,
  applyConfigDefaults,
  configSchemaProblems,
  defaultedConfigProblems,
  engineConfigProperties,
  type AdapterConfig,
  type AgentAdapterDefinition,
  type EngineConfig,
} from './contracts/adapter-config.js'
// TypeBox, for adapter config schemas: adapters take @slaw/core as a peer and use this one TypeBox.
export { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox'
export type { TowerClient, TowerClientContext, TowerMode, TowerSkillsHook, TowerStatus } from './contracts/tower-client.js'
export type { TowerRejection } from './contracts/tower-client.js'
export type * from './records.js'
export { issueStatuses, issuePriorities } from './records.js'

export { memoryLocks, type MemoryLocksOptions } from './locks/memory-locks.js'
export { SlawError, errorCodes, isSlawError, type ErrorCode, type ErrorDetail } from './errors.js'
export { CodedError, type ErrorRegistry } from './errors.js'
export type { Actor } from './services/foundation/actor.js'
export { operatorActor, systemActor } from './services/foundation/actor.js'
export type { Services } from './services/index.js'
export type { CheckoutGuard, IssueDetail } from './services/work/issues.js'
export type { JobHandler, JobRunner, JobRunnerOptions } from './services/runs/jobs.js'
export { redact } from './services/foundation/redact.js'
export { MasterKey } from './services/secrets/master-key.js'
export { uuidv7, isUuid, hashToken } from './services/foundation/ids.js'
export { clearSessionCookie, readCookie, sameOriginOrSafe, sessionCookie } from './http/console-cookie.js'
export { skillContentHash } from './services/fleet/skill-content.js'
export { slawVersion } from './version.js'
// Outbox payloads in the ingest wire shape, shared with the tower client's full resync.
export { outboxUpserts } from './services/audit/activity-recorder.js'
export { costEventFact, projectUpsert } from './services/governance/governance-outbox.js'
// Secrets: the master key's persistence and rotation, the built-in provider, binding helpers.
export {
  MasterKeyMismatchError,
  MasterKeyRequiredError,
  MasterKeyFileModeError,
  checkMasterKey,
  loadMasterKey,
  readOrCreateKeyFile,
  masterKeyFileName,
  type LoadedMasterKey,
  type MasterKeyOption,
} from './services/secrets/master-key-loading.js'
export { encryptedColumns, registerEncryptedColumn, rotateMasterKey, type EncryptedColumn, type RotationReport } from './services/secrets/encrypted-columns.js'
export { localEncryptedProvider, localSecretAad } from './services/secrets/local-encrypted.js'
export type { EnvBinding, ResolveSecretInput, SecretConsumer, SecretResolver } from './services/secrets/env-bindings.js'
export { bindingSources, findSecretBindings, registerBindingSource, validateBindings, type BindingSource, type SecretBinding } from './services/secrets/binding-usage.js'
export { findSensitiveConfig, isSensitiveConfigKey } from './services/secrets/sensitive-config.js'
export { endpointAllowed, endpointOrigin, parseEndpointAllowList } from './services/secrets/endpoint-allowlist.js'
export { providerConfigError, readProviderConfig, type ProviderConfigReader } from './services/secrets/provider-config.js'
export { secretKeyFromName } from './services/secrets/secrets.js'
// Heartbeat runs (docs/heartbeats.md).
export { JobDeferred, JobRejected, type JobControl } from './services/runs/jobs.js'
export { queueWake, type WakeReason, type WakeRequest, type QueuedWake } from './services/runs/wakes.js'
export { runOptionsFromEnv } from './services/runs/run-options.js'
export { routineLimitsFromEnv, type RoutineLimits } from './services/routines/routine-access.js'
export type { RunOptions } from './services/runs/run-engine.js'
export type { CreatedAgent, CreateAgentInput, UpdateAgentInput } from './services/org/agents.js'
