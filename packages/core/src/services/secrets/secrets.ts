import type { SecretProvider } from '../../contracts/secret-provider.js'
import { UniqueViolation, type SecretAccessEvent, type SecretManagedMode, type SecretProviderConfigRecord, type SecretRecord, type SecretStatus, type StorageSession } from '../../contracts/storage.js'
import { SlawError, invalid, notFound } from '../../errors.js'
import { actorColumns, assertSquadVisible, requireOperator, type Actor } from '../foundation/actor.js'
import type { ResolveSecretInput, SecretResolver } from './env-bindings.js'
import type { ServiceContext } from '../foundation/context.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import { localEncryptedType } from './local-encrypted.js'
import { recordActivity } from '../audit/activity-recorder.js'
import { findSecretBindings, type SecretBinding } from './binding-usage.js'
import { providerFailure, withProviderTimeout, type SecretProviderConfigService } from './secret-providers.js'
import type { SquadService } from '../org/squads.js'
import { inSquad } from '../foundation/same-squad.js'

/** A secret's reference key: letters, digits, `_`, `.` and `-`. */
export const secretKeyPattern = /^[A-Za-z0-9_.-]+$/
export const secretKeyMaxLength = 128

/** The key a name gives when none is sent: runs of other characters become `_`, trimmed (`GitHub token` → `GitHub_token`). */
export function secretKeyFromName(name: string): string {
  return name
    .trim()
    .replace(/[^A-Za-z0-9_.-]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, secretKeyMaxLength)
}

export interface CreateSecretInput {
  name: string
  key?: string
  provider?: string
  providerConfigId?: string | null
  managedMode?: SecretManagedMode
  value?: string
  externalRef?: string
  description?: string | null
  providerVersionRef?: string | null
  providerMetadata?: Record<string, unknown> | null
}

export interface UpdateSecretInput {
  name?: string
  key?: string
  status?: SecretStatus
  providerConfigId?: string | null
  description?: string | null
  externalRef?: string
  providerMetadata?: Record<string, unknown> | null
}

export interface RotateSecretInput {
  value?: string
  externalRef?: string
  providerVersionRef?: string | null
  providerConfigId?: string | null
}

export interface RemoteImportCandidate {
  externalRef: string
  name: string
  key: string
  status: 'ready' | 'duplicate' | 'conflict'
  existingSecretId: string | null
}

export interface RemoteImportSelection {
  externalRef: string
  name?: string
  key?: string
  description?: string | null
  providerVersionRef?: string | null
  providerMetadata?: Record<string, unknown> | null
}

export interface RemoteImportResult {
  imported: number
  skipped: number
  errored: number
  results: Array<{ externalRef: string; status: 'imported' | 'skipped' | 'errored'; secretId: string | null; reason: string | null }>
}

/** Access events a page holds unless asked otherwise, and at most. */
const accessEventsLimit = { default: 100, max: 500 }

const keyTaken = (key: string) => new SlawError('secret_key_taken', `Another secret of this squad already has the key "${key}".`)

/**
 * Secrets of a squad (Operator only): metadata, versions, provider configurations and the access
 * audit trail. Values go in through create and rotate and come out only through `resolve` (the
 * `SecretResolver` the run engine calls), never in a response, a log line or an activity entry.
 */
/** A secret id at the end of a remote secret's name (`slaw/0197…`). */
const trailingUuid = /([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i

export class SecretService implements SecretResolver {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
    readonly providers: SecretProviderConfigService,
    private readonly timeoutMs: number,
  ) {}

  // Reads -----------------------------------------------------------------------------------------

  async list(actor: Actor, squadId: string): Promise<SecretRecord[]> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    requireOperator(actor)
    return this.ctx.storage.secrets.list(squadId)
  }

  /** Any secret, a deleted one included (its metadata, usage and audit trail stay readable). */
  async get(actor: Actor, id: string): Promise<SecretRecord> {
    const secret = isUuid(id) ? await this.ctx.storage.secrets.get(id) : undefined
    // Another squad's secret is as unknown to an agent key as a missing one (404); its own squad's is 403.
    if (!secret) throw notFound('Secret')
    assertSquadVisible(actor, secret.squadId, 'Secret')
    requireOperator(actor)
    return secret
  }

  /** A secret that may still change: 404 when unknown or deleted. */
  private async live(session: StorageSession, actor: Actor, id: string): Promise<SecretRecord> {
    const secret = isUuid(id) ? await session.secrets.get(id) : undefined
    if (!secret || secret.status === 'deleted') throw notFound('Secret')
    assertSquadVisible(actor, secret.squadId, 'Secret')
    requireOperator(actor)
    return secret
  }

  async usage(actor: Actor, id: string): Promise<{ bindings: SecretBinding[]; consumers: Array<{ type: string; id: string; name: string }> }> {
    const secret = await this.get(actor, id)
    const bindings = await findSecretBindings(this.ctx.storage, secret.squadId, secret.id)
    const consumers = new Map<string, { type: string; id: string; name: string }>()
    for (const b of bindings) consumers.set(`${b.consumerType}:${b.consumerId}`, { type: b.consumerType, id: b.consumerId, name: b.consumerName })
    return { bindings, consumers: [...consumers.values()] }
  }

  async accessEvents(actor: Actor, id: string, page: { limit?: number; before?: string }): Promise<SecretAccessEvent[]> {
    const secret = await this.get(actor, id)
    if (page.before !== undefined && !isUuid(page.before)) throw invalid('/querystring/before', 'before must be an access event id')
    return this.ctx.storage.secrets.listAccessEvents(secret.id, {
      limit: Math.min(Math.max(page.limit ?? accessEventsLimit.default, 1), accessEventsLimit.max),
      ...(page.before ? { before: page.before } : {}),
    })
  }

  // Writes ----------------------------------------------------------------------------------------

  async create(actor: Actor, squadId: string, input: CreateSecretInput): Promise<SecretRecord> {
    return this.ctx.storage.transaction(async (tx) => {
      await this.writableSquad(tx, actor, squadId)
      const managedMode = input.managedMode ?? 'svc_managed'
      checkModeFields(managedMode, input.value, input.externalRef, true)
      const { provider, config } = await this.pickProvider(tx, squadId, input.provider, input.providerConfigId)
      if (managedMode === 'external_reference' && provider.type === localEncryptedType) {
        throw invalid('/provider', 'an external_reference secret needs an external provider (local_encrypted holds svc_managed values only)')
      }
      const name = input.name.trim()
      if (!name) throw invalid('/name', 'name must not be blank')
      const key = input.key ?? secretKeyFromName(name)
      if (!secretKeyPattern.test(key)) throw invalid(input.key === undefined ? '/name' : '/key', `key "${key}" must match ${secretKeyPattern.source} (derived from the name when omitted)`)
      const id = uuidv7()
      let secret: SecretRecord
      try {
        secret = await tx.secrets.insert({
          id,
          squadId,
          key,
          name,
          provider: provider.type,
          providerConfigId: config?.id ?? null,
          status: 'active',
          managedMode,
          externalRef: managedMode === 'external_reference' ? input.externalRef! : null,
          latestVersion: 1,
          description: input.description ?? null,
          providerMetadata: input.providerMetadata ?? null,
        })
      } catch (err) {
        if (err instanceof UniqueViolation && err.constraint === 'secrets_squad_key') throw keyTaken(key)
        throw err
      }
      await this.writeVersion(tx, secret, 1, provider, config, { value: input.value, externalRef: input.externalRef, providerVersionRef: input.providerVersionRef ?? null })
      await recordActivity(tx, actor, { squadId, action: 'secret.created', entityType: 'secret', entityId: id, details: describe(secret) })
      return secret
    })
  }

  async update(actor: Actor, id: string, input: UpdateSecretInput): Promise<SecretRecord> {
    return this.ctx.storage.transaction(async (tx) => {
      const secret = await this.live(tx, actor, id)
      if (input.status === 'deleted') throw invalid('/status', 'delete a secret with DELETE /api/secrets/{id}')
      if (input.externalRef !== undefined && secret.managedMode !== 'external_reference') throw invalid('/externalRef', 'only an external_reference secret has an externalRef')
      if (input.key !== undefined && !secretKeyPattern.test(input.key)) throw invalid('/key', `key must match ${secretKeyPattern.source}`)
      if (input.name !== undefined && !input.name.trim()) throw invalid('/name', 'name must not be blank')
      if (input.providerConfigId !== undefined && input.providerConfigId !== null) await this.configFor(tx, secret.squadId, input.providerConfigId, secret.provider)
      let updated: SecretRecord | undefined
      try {
        updated = await tx.secrets.update(id, {
          ...(input.name !== undefined ? { name: input.name.trim() } : {}),
          ...(input.key !== undefined ? { key: input.key } : {}),
          ...(input.status !== undefined ? { status: input.status } : {}),
          ...(input.providerConfigId !== undefined ? { providerConfigId: input.providerConfigId } : {}),
          ...(input.description !== undefined ? { description: input.description } : {}),
          ...(input.externalRef !== undefined ? { externalRef: input.externalRef } : {}),
          ...(input.providerMetadata !== undefined ? { providerMetadata: input.providerMetadata } : {}),
        })
      } catch (err) {
        if (err instanceof UniqueViolation && err.constraint === 'secrets_squad_key') throw keyTaken(input.key!)
        throw err
      }
      if (!updated) throw notFound('Secret')
      // An external reference's latest version follows a corrected reference or configuration
      // (no new version: rotate makes those); svc_managed values stay where they were stored.
      if (secret.managedMode === 'external_reference') {
        await tx.secrets.updateVersion(id, secret.latestVersion, {
          ...(input.externalRef !== undefined ? { ref: input.externalRef } : {}),
          ...(input.providerConfigId !== undefined ? { providerConfigId: input.providerConfigId } : {}),
        })
      }
      const action = input.status !== undefined && input.status !== secret.status ? `secret.${input.status === 'active' ? 'enabled' : input.status}` : 'secret.updated'
      await recordActivity(tx, actor, { squadId: secret.squadId, action, entityType: 'secret', entityId: id, details: { ...describe(updated), changed: Object.keys(input).sort() } })
      return updated
    })
  }

  /**
   * A new version: the value (svc_managed) or reference (external_reference) becomes `latest`.
   * The version number is reserved by one conditional update, so concurrent rotations each get
   * their own, strictly increasing, and none is lost.
   */
  async rotate(actor: Actor, id: string, input: RotateSecretInput): Promise<SecretRecord> {
    return this.ctx.storage.transaction(async (tx) => {
      const secret = await this.live(tx, actor, id)
      checkModeFields(secret.managedMode, input.value, input.externalRef, false)
      const configId = input.providerConfigId !== undefined ? input.providerConfigId : secret.providerConfigId
      const config = configId ? await this.configFor(tx, secret.squadId, configId, secret.provider) : undefined
      const provider = this.providers.provider(secret.provider)
      const now = this.ctx.now()
      const version = await tx.secrets.bumpVersion(id, now)
      if (version === undefined) throw notFound('Secret')
      const externalRef = secret.managedMode === 'external_reference' ? (input.externalRef ?? secret.externalRef!) : null
      await this.writeVersion(tx, secret, version, provider, config, { value: input.value, externalRef: externalRef ?? undefined, providerVersionRef: input.providerVersionRef ?? null })
      const updated = await tx.secrets.update(id, { lastRotatedAt: now, providerConfigId: config?.id ?? null, ...(externalRef !== null ? { externalRef } : {}) })
      await recordActivity(tx, actor, { squadId: secret.squadId, action: 'secret.rotated', entityType: 'secret', entityId: id, details: { ...describe(updated!), version } })
      return updated!
    })
  }

  /**
   * Revokes: the secret is marked deleted (its key is free again), the values slaw holds are
   * dropped and svc_managed values in an external provider are deleted there; every binding that
   * still names it fails to resolve with a clear error.
   */
  async delete(actor: Actor, id: string): Promise<void> {
    const versions = await this.ctx.storage.transaction(async (tx) => {
      const secret = await this.live(tx, actor, id)
      const versions = await tx.secrets.listVersions(id)
      await tx.secrets.update(id, { status: 'deleted' })
      // A local envelope is the value: overwritten; the rows stay for the audit's version numbers.
      await tx.secrets.dropLocalValues(id)
      await recordActivity(tx, actor, { squadId: secret.squadId, action: 'secret.deleted', entityType: 'secret', entityId: id, details: describe(secret) })
      return secret.managedMode === 'svc_managed' ? versions.filter((v) => v.provider !== localEncryptedType) : []
    })
    // Remote values slaw stored for itself go after the commit, best effort: the secret is revoked either way.
    for (const v of versions) {
      const provider = this.providers.registry.get(v.provider)
      const config = v.providerConfigId ? ((await this.ctx.storage.secrets.getProviderConfig(v.providerConfigId))?.config ?? {}) : {}
      await provider
        ?.delete({ ref: v.ref, config })
        .catch((err: unknown) => this.ctx.log.warn({ secretId: id, version: v.version, errorCode: providerFailure(err).code }, 'could not delete a revoked secret value at its provider'))
    }
  }

  // Remote import ---------------------------------------------------------------------------------

  async remoteImportPreview(
    actor: Actor,
    squadId: string,
    input: { providerConfigId: string; query?: string; pageSize?: number; nextToken?: string },
  ): Promise<{ candidates: RemoteImportCandidate[]; nextToken: string | null }> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    requireOperator(actor)
    const config = await this.configFor(this.ctx.storage, squadId, input.providerConfigId)
    const provider = this.providers.provider(config.provider, '/providerConfigId')
    if (!provider.listRemote) throw invalid('/providerConfigId', `provider ${provider.type} cannot list remote secrets`)
    let page: Awaited<ReturnType<NonNullable<SecretProvider['listRemote']>>>
    try {
      page = await withProviderTimeout(`${provider.type} listRemote`, this.timeoutMs, () =>
        provider.listRemote!({ config: config.config, pageSize: input.pageSize ?? 50, ...(input.query ? { query: input.query } : {}), ...(input.nextToken ? { nextToken: input.nextToken } : {}) }),
      )
    } catch (err) {
      throw new SlawError('secret_unavailable', `Listing ${provider.type} secrets failed: ${providerFailure(err).message}`)
    }
    const items = page.items.map((i) => ({ externalRef: i.externalRef, name: i.name, key: secretKeyFromName(i.name) }))
    const byRef = new Map(
      (
        await this.ctx.storage.secrets.findByExternalRefs(
          squadId,
          config.id,
          items.map((i) => i.externalRef),
        )
      ).map((s) => [s.externalRef!, s]),
    )
    const byKey = new Map(
      (
        await this.ctx.storage.secrets.findByKeys(
          squadId,
          items.map((i) => i.key),
        )
      ).map((s) => [s.key, s]),
    )
    // A secret slaw itself stored through this config sits remotely under a name ending in its id
    // (`<prefix><secretId>` in every shipped provider): it is already here, not a new one to import.
    const ownIds = [...new Set(items.map((i) => trailingUuid.exec(i.name)?.[1]?.toLowerCase()).filter((id): id is string => id !== undefined))]
    const stored = new Map(
      (await Promise.all(ownIds.map((id) => this.ctx.storage.secrets.get(id))))
        .filter((s): s is SecretRecord => !!s && s.squadId === squadId && s.providerConfigId === config.id && s.managedMode === 'svc_managed' && s.status !== 'deleted')
        .map((s) => [s.id, s]),
    )
    const candidates = items.map((i): RemoteImportCandidate => {
      const dup = byRef.get(i.externalRef) ?? stored.get(trailingUuid.exec(i.name)?.[1]?.toLowerCase() ?? '')
      if (dup) return { ...i, status: 'duplicate', existingSecretId: dup.id }
      const clash = byKey.get(i.key)
      if (clash || !i.key) return { ...i, status: 'conflict', existingSecretId: clash?.id ?? null }
      return { ...i, status: 'ready', existingSecretId: null }
    })
    return { candidates, nextToken: page.nextToken ?? null }
  }

  /** Creates external_reference secrets for the selections, in one transaction; duplicates are skipped, clashes errored. */
  async remoteImport(actor: Actor, squadId: string, input: { providerConfigId: string; secrets: RemoteImportSelection[] }): Promise<RemoteImportResult> {
    return this.ctx.storage.transaction(async (tx) => {
      await this.writableSquad(tx, actor, squadId)
      const config = await this.configFor(tx, squadId, input.providerConfigId)
      const provider = this.providers.provider(config.provider, '/providerConfigId')
      if (provider.type === localEncryptedType) throw invalid('/providerConfigId', 'local_encrypted has no remote secrets to import')
      const existing = new Set(
        (
          await tx.secrets.findByExternalRefs(
            squadId,
            config.id,
            input.secrets.map((s) => s.externalRef),
          )
        ).map((s) => s.externalRef),
      )
      const takenKeys = new Set(
        (
          await tx.secrets.findByKeys(
            squadId,
            input.secrets.map((s) => s.key ?? secretKeyFromName(s.name ?? s.externalRef)),
          )
        ).map((s) => s.key),
      )
      const result: RemoteImportResult = { imported: 0, skipped: 0, errored: 0, results: [] }
      for (const sel of input.secrets) {
        const name = (sel.name ?? sel.externalRef).trim()
        const key = sel.key ?? secretKeyFromName(name)
        const done = (status: 'imported' | 'skipped' | 'errored', secretId: string | null, reason: string | null) => {
          result[status]++
          result.results.push({ externalRef: sel.externalRef, status, secretId, reason })
        }
        if (existing.has(sel.externalRef)) {
          done('skipped', null, 'already imported')
          continue
        }
        if (!key || !secretKeyPattern.test(key)) {
          done('errored', null, `key "${key}" must match ${secretKeyPattern.source}`)
          continue
        }
        if (takenKeys.has(key)) {
          done('errored', null, `the key "${key}" is taken in this squad`)
          continue
        }
        const id = uuidv7()
        const secret = await tx.secrets.insert({
          id,
          squadId,
          key,
          name,
          provider: provider.type,
          providerConfigId: config.id,
          status: 'active',
          managedMode: 'external_reference',
          externalRef: sel.externalRef,
          latestVersion: 1,
          description: sel.description ?? null,
          providerMetadata: sel.providerMetadata ?? null,
        })
        await this.writeVersion(tx, secret, 1, provider, config, { externalRef: sel.externalRef, providerVersionRef: sel.providerVersionRef ?? null })
        await recordActivity(tx, actor, { squadId, action: 'secret.imported', entityType: 'secret', entityId: id, details: describe(secret) })
        existing.add(sel.externalRef)
        takenKeys.add(key)
        done('imported', id, null)
      }
      return result
    })
  }

  // Resolve ---------------------------------------------------------------------------------------

  /**
   * The value of a secret_ref binding at run time. Every call, success or failure, writes an
   * access event (and a success the secret's lastResolvedAt); a failure throws 409
   * `secret_unavailable` naming the secret and the reason, never a value.
   */
  async resolve(input: ResolveSecretInput): Promise<string> {
    const found = isUuid(input.secretId) ? await this.ctx.storage.secrets.getForResolve(input.secretId, input.version) : undefined
    if (!found) throw new SlawError('secret_unavailable', `Secret ${input.secretId} (${input.configPath}) does not exist.`)
    const { secret, version } = found
    const actor = actorColumns(input.actor)
    const event = (outcome: 'success' | 'failure', errorCode: string | null) => ({
      id: uuidv7(),
      secretId: secret.id,
      squadId: secret.squadId,
      version: version?.version ?? (input.version === 'latest' ? null : input.version),
      provider: version?.provider ?? secret.provider,
      actorType: actor.actorType,
      actorId: actor.actorId,
      consumerType: input.consumer.type,
      consumerId: input.consumer.id,
      configPath: input.configPath,
      issueId: input.issueId,
      heartbeatRunId: input.heartbeatRunId,
      outcome,
      errorCode,
    })
    const fail = async (errorCode: string, reason: string): Promise<never> => {
      await this.ctx.storage.secrets.recordAccess(event('failure', errorCode), null)
      this.ctx.log.warn({ secretId: secret.id, consumerType: input.consumer.type, consumerId: input.consumer.id, configPath: input.configPath, errorCode }, 'secret resolve failed')
      throw new SlawError('secret_unavailable', `Secret "${secret.key}" (${input.configPath}) cannot be resolved: ${reason}.`)
    }
    if (secret.squadId !== input.squadId) return fail('squad_mismatch', 'it belongs to another squad')
    if (secret.status !== 'active') return fail(`secret_${secret.status}`, `it is ${secret.status}`)
    if (!version) return fail('version_not_found', `it has no version ${input.version === 'latest' ? secret.latestVersion : input.version}`)
    const provider = this.providers.registry.get(version.provider)
    if (!provider) return fail('provider_not_registered', `its provider "${version.provider}" is not registered on this node`)
    const config = version.providerConfigId ? ((await this.ctx.storage.secrets.getProviderConfig(version.providerConfigId))?.config ?? {}) : {}
    let value: string
    try {
      value = await withProviderTimeout(`${provider.type} resolve`, this.timeoutMs, () => provider.resolve({ ref: version.ref, config, secretId: secret.id, version: version.version }))
      if (typeof value !== 'string') throw new TypeError('provider resolved to a non-string')
    } catch (err) {
      const failure = providerFailure(err, provider.type)
      return fail(failure.code, failure.message)
    }
    await this.ctx.storage.secrets.recordAccess(event('success', null), this.ctx.now())
    return value
  }

  // Helpers ---------------------------------------------------------------------------------------

  /** Visibility (404), then Operator (403), then an archived squad (409). */
  private async writableSquad(tx: StorageSession, actor: Actor, squadId: string): Promise<void> {
    const squad = await this.squads.visible(tx, actor, squadId)
    requireOperator(actor)
    if (squad.status === 'archived') throw new SlawError('squad_archived')
  }

  /** The provider and config a create names: the config's provider, else the named provider (with the squad default if it is of that type), else the squad default, else local_encrypted. */
  private async pickProvider(
    tx: StorageSession,
    squadId: string,
    type: string | undefined,
    configId: string | null | undefined,
  ): Promise<{ provider: SecretProvider; config: SecretProviderConfigRecord | undefined }> {
    if (configId) {
      const config = await this.configFor(tx, squadId, configId, type)
      return { provider: this.providers.provider(config.provider, '/providerConfigId'), config }
    }
    const defaults = configId === null ? undefined : (await tx.secrets.listProviderConfigs(squadId)).find((c) => c.isDefault)
    if (type !== undefined) {
      const provider = this.providers.provider(type)
      return { provider, config: defaults?.provider === type ? defaults : undefined }
    }
    if (defaults) return { provider: this.providers.provider(defaults.provider, '/providerConfigId'), config: defaults }
    return { provider: this.providers.provider(localEncryptedType), config: undefined }
  }

  /** A provider config of the squad (and of the provider, when named), or 400. */
  private async configFor(session: StorageSession, squadId: string, configId: string, provider?: string): Promise<SecretProviderConfigRecord> {
    const found = isUuid(configId) ? await session.secrets.getProviderConfig(configId) : undefined
    const config = inSquad(found, squadId, '/providerConfigId', 'providerConfigId must name a provider configuration of this squad')
    if (provider !== undefined && config.provider !== provider) throw invalid('/providerConfigId', `the configuration is for ${config.provider}, not ${provider}`)
    return config
  }

  private async writeVersion(
    tx: StorageSession,
    secret: SecretRecord,
    version: number,
    provider: SecretProvider,
    config: SecretProviderConfigRecord | undefined,
    input: { value?: string | undefined; externalRef?: string | undefined; providerVersionRef: string | null },
  ): Promise<void> {
    let ref: string
    if (secret.managedMode === 'svc_managed') {
      try {
        ref = (await withProviderTimeout(`${provider.type} store`, this.timeoutMs, () => provider.store({ secretId: secret.id, version, value: input.value!, config: config?.config ?? {} }))).ref
      } catch (err) {
        throw new SlawError('secret_unavailable', `Storing the value in ${provider.type} failed: ${providerFailure(err).message}.`)
      }
    } else {
      ref = input.externalRef!
    }
    await tx.secrets.insertVersion({
      secretId: secret.id,
      version,
      provider: provider.type,
      providerConfigId: config?.id ?? null,
      ref,
      keyId: provider.type === localEncryptedType ? this.ctx.masterKey.keyId : null,
      providerVersionRef: input.providerVersionRef,
    })
  }
}

/** svc_managed needs a value (and no externalRef); external_reference needs an externalRef (create) and never a value. */
function checkModeFields(mode: SecretManagedMode, value: string | undefined, externalRef: string | undefined, creating: boolean): void {
  if (mode === 'svc_managed') {
    if (value === undefined) throw invalid('/value', 'an svc_managed secret needs a value')
    if (externalRef !== undefined) throw invalid('/externalRef', 'an svc_managed secret has no externalRef (use managedMode external_reference)')
  } else {
    if (value !== undefined) throw invalid('/value', 'an external_reference secret never takes a value; its provider holds it')
    if (creating && (externalRef === undefined || externalRef === '')) throw invalid('/externalRef', 'an external_reference secret needs an externalRef')
  }
}

/** Activity details of a secret: metadata only. */
function describe(s: SecretRecord): Record<string, unknown> {
  return { key: s.key, name: s.name, provider: s.provider, managedMode: s.managedMode, status: s.status, latestVersion: s.latestVersion }
}
