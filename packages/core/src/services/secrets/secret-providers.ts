import type { SecretProvider } from '../../contracts/secret-provider.js'
import { SecretProviderError } from '../../contracts/secret-provider.js'
import type { SecretProviderConfigRecord, StorageSession } from '../../contracts/storage.js'
import { SlawError, invalid, notFound } from '../../errors.js'
import { assertSquadVisible, requireOperator, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import { localEncryptedType } from './local-encrypted.js'
import { recordActivity } from '../audit/activity-recorder.js'
import { findSensitiveConfig } from './sensitive-config.js'
import type { SquadService } from '../org/squads.js'

/** How long a provider call (resolve, health, list) may take before slaw gives up on it. */
export const defaultProviderTimeoutMs = 10_000

/**
 * The registered providers by type: `local_encrypted` always, plus `createInstance({ secretProviders })`.
 * Two providers claiming one type are a configuration error at start.
 */
export class SecretProviderRegistry {
  readonly #byType = new Map<string, SecretProvider>()

  constructor(builtIn: SecretProvider, extra: readonly SecretProvider[] = []) {
    for (const p of [builtIn, ...extra]) {
      if (!p || typeof p.type !== 'string' || !p.type) throw new TypeError('createInstance: every secret provider needs a non-empty `type`')
      if (this.#byType.has(p.type)) throw new TypeError(`createInstance: two secret providers claim type "${p.type}"`)
      if (!Array.isArray(p.configKeys)) throw new TypeError(`createInstance: secret provider "${p.type}" must declare its configKeys`)
      this.#byType.set(p.type, p)
    }
  }

  get(type: string): SecretProvider | undefined {
    return this.#byType.get(type)
  }

  all(): SecretProvider[] {
    return [...this.#byType.values()]
  }

  /** Closes the plugins (not the built-in), in reverse order. */
  async close(log: { warn(obj: object, msg: string): void }): Promise<void> {
    for (const p of this.all().reverse()) await p.close?.().catch((err: unknown) => log.warn({ err, provider: p.type }, 'secret provider close failed'))
  }
}

/** Runs a provider call with a deadline; a provider that never answers fails like one that timed out. */
export async function withProviderTimeout<T>(what: string, ms: number, fn: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SecretProviderError('timeout', `${what} did not answer within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([fn(), deadline])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * A provider failure in words safe to show: a SecretProviderError's own message (the contract keeps
 * values out of it), else its type only. A local envelope that does not open is `decrypt_failed`.
 */
export function providerFailure(err: unknown, provider?: string): { code: string; message: string } {
  if (err instanceof SecretProviderError) {
    const local = provider === localEncryptedType && (err.code === 'access_denied' || err.code === 'not_found')
    return { code: local ? 'decrypt_failed' : `provider_${err.code}`, message: err.message }
  }
  if (err instanceof SlawError) return { code: 'decrypt_failed', message: err.message }
  return { code: 'provider_error', message: 'the provider failed unexpectedly (see the instance log)' }
}

export interface CreateProviderConfigInput {
  provider: string
  name?: string
  config?: Record<string, unknown>
  isDefault?: boolean
}

export interface ProviderHealth {
  provider: string
  providerConfigId: string | null
  name: string
  ok: boolean
  message: string | null
}

/**
 * Provider configurations of a squad: non-sensitive connection settings only (400
 * `sensitive_config_rejected` for anything that looks like a credential, at any depth), keys limited
 * to the provider's `configKeys`, one default per squad. Operator only.
 */
export class SecretProviderConfigService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
    readonly registry: SecretProviderRegistry,
    private readonly timeoutMs: number,
  ) {}

  /** The provider a request names, or 400. */
  provider(type: string, path = '/provider'): SecretProvider {
    const p = this.registry.get(type)
    if (!p)
      throw invalid(
        path,
        `unknown secret provider "${type}"; registered: ${this.registry
          .all()
          .map((x) => x.type)
          .join(', ')}`,
      )
    return p
  }

  /** Rejects sensitive entries first (whatever the provider), then keys the provider does not declare. */
  checkConfig(provider: SecretProvider, config: Record<string, unknown>): void {
    const sensitive = findSensitiveConfig(config)
    if (sensitive.length) {
      throw new SlawError(
        'sensitive_config_rejected',
        `Provider configuration may not hold credentials (${sensitive.map((p) => `/config${p}`).join(', ')}); ${provider.type} reads them from its own credential chain.`,
        sensitive.map((p) => ({ path: `/config${p}`, message: 'sensitive key or credential-like value' })),
      )
    }
    const unknown = Object.keys(config).filter((k) => !provider.configKeys.includes(k))
    if (unknown.length) {
      throw new SlawError(
        'invalid_payload',
        `${provider.type} does not accept config keys ${unknown.join(', ')} (accepted: ${provider.configKeys.join(', ') || 'none'}).`,
        unknown.map((k) => ({ path: `/config/${k}`, message: 'not a config key of this provider' })),
      )
    }
    // The provider's own refusals (an address its node's credentials may not go to), before any call.
    const problems = provider.validateConfig?.(config) ?? []
    if (problems.length) {
      throw new SlawError(
        'invalid_payload',
        `${provider.type} refuses this configuration: ${problems.map((p) => p.message).join('; ')}`,
        problems.map((p) => ({ path: `/config${p.path}`, message: p.message })),
      )
    }
  }

  /** A config of the squad (404 otherwise), read inside `session`. */
  async get(session: StorageSession, actor: Actor, id: string): Promise<SecretProviderConfigRecord> {
    const config = isUuid(id) ? await session.secrets.getProviderConfig(id) : undefined
    if (!config) throw notFound('Secret provider configuration')
    // Another squad's configuration is as unknown to an agent key as a missing one.
    assertSquadVisible(actor, config.squadId, 'Secret provider configuration')
    requireOperator(actor)
    return config
  }

  async read(actor: Actor, id: string): Promise<SecretProviderConfigRecord> {
    return this.get(this.ctx.storage, actor, id)
  }

  async list(actor: Actor, squadId: string): Promise<SecretProviderConfigRecord[]> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    requireOperator(actor)
    return this.ctx.storage.secrets.listProviderConfigs(squadId)
  }

  async create(actor: Actor, squadId: string, input: CreateProviderConfigInput): Promise<SecretProviderConfigRecord> {
    return this.ctx.storage.transaction(async (tx) => {
      await this.squads.visible(tx, actor, squadId)
      requireOperator(actor)
      const provider = this.provider(input.provider)
      const config = input.config ?? {}
      this.checkConfig(provider, config)
      const id = uuidv7()
      let created = await tx.secrets.insertProviderConfig({ id, squadId, provider: provider.type, name: input.name?.trim() || provider.type, config, isDefault: false })
      if (input.isDefault) {
        await tx.secrets.setDefaultProviderConfig(squadId, id)
        created = { ...created, isDefault: true }
      }
      await recordActivity(tx, actor, {
        squadId,
        action: 'secret_provider_config.created',
        entityType: 'secret_provider_config',
        entityId: id,
        details: { provider: provider.type, name: created.name, isDefault: created.isDefault },
      })
      return created
    })
  }

  async update(actor: Actor, id: string, input: { name?: string; config?: Record<string, unknown> }): Promise<SecretProviderConfigRecord> {
    return this.ctx.storage.transaction(async (tx) => {
      const existing = await this.get(tx, actor, id)
      if (input.config !== undefined) this.checkConfig(this.provider(existing.provider, '/config'), input.config)
      const updated = await tx.secrets.updateProviderConfig(id, {
        ...(input.name !== undefined ? { name: input.name.trim() || existing.name } : {}),
        ...(input.config !== undefined ? { config: input.config } : {}),
      })
      if (!updated) throw notFound('Secret provider configuration')
      await recordActivity(tx, actor, {
        squadId: existing.squadId,
        action: 'secret_provider_config.updated',
        entityType: 'secret_provider_config',
        entityId: id,
        details: { provider: existing.provider, name: updated.name },
      })
      return updated
    })
  }

  async makeDefault(actor: Actor, id: string): Promise<SecretProviderConfigRecord> {
    return this.ctx.storage.transaction(async (tx) => {
      const existing = await this.get(tx, actor, id)
      await tx.secrets.setDefaultProviderConfig(existing.squadId, id)
      await recordActivity(tx, actor, {
        squadId: existing.squadId,
        action: 'secret_provider_config.default_set',
        entityType: 'secret_provider_config',
        entityId: id,
        details: { provider: existing.provider },
      })
      return { ...existing, isDefault: true }
    })
  }

  async delete(actor: Actor, id: string): Promise<void> {
    await this.ctx.storage.transaction(async (tx) => {
      const existing = await this.get(tx, actor, id)
      const using = await tx.secrets.countSecretsUsingConfig(id)
      if (using > 0) throw new SlawError('secret_provider_config_in_use', `${using} secret(s) still use this provider configuration; delete them or move them to another configuration first.`)
      await tx.secrets.deleteProviderConfig(id)
      await recordActivity(tx, actor, {
        squadId: existing.squadId,
        action: 'secret_provider_config.deleted',
        entityType: 'secret_provider_config',
        entityId: id,
        details: { provider: existing.provider },
      })
    })
  }

  /** Connectivity of one saved configuration. */
  async health(actor: Actor, id: string): Promise<ProviderHealth> {
    const config = await this.read(actor, id)
    return this.check(config.provider, config.config, config.id, config.name)
  }

  /** Tests a provider and config before saving: the config rules, then health and (when it can) a first listing. */
  async discoveryPreview(
    actor: Actor,
    squadId: string,
    input: { provider: string; config?: Record<string, unknown> },
  ): Promise<ProviderHealth & { canListRemote: boolean; sample: Array<{ externalRef: string; name: string }> }> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    requireOperator(actor)
    const provider = this.provider(input.provider)
    const config = input.config ?? {}
    this.checkConfig(provider, config)
    const health = await this.check(provider.type, config, null, provider.type)
    let sample: Array<{ externalRef: string; name: string }> = []
    if (health.ok && provider.listRemote) {
      try {
        const page = await withProviderTimeout(`${provider.type} listRemote`, this.timeoutMs, () => provider.listRemote!({ config, pageSize: 10 }))
        sample = page.items.slice(0, 10).map((i) => ({ externalRef: i.externalRef, name: i.name }))
      } catch (err) {
        return { ...health, ok: false, message: providerFailure(err).message, canListRemote: true, sample }
      }
    }
    return { ...health, canListRemote: Boolean(provider.listRemote), sample }
  }

  /** The registered provider types, for the squad's Operator. */
  async supported(actor: Actor, squadId: string): Promise<Array<{ type: string; configKeys: string[]; canListRemote: boolean; builtIn: boolean }>> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    requireOperator(actor)
    return this.registry.all().map((p) => ({ type: p.type, configKeys: [...p.configKeys], canListRemote: Boolean(p.listRemote), builtIn: p.type === localEncryptedType }))
  }

  /** Every registered provider type without a saved config (with an empty config), then every saved config of the squad. */
  async aggregateHealth(actor: Actor, squadId: string): Promise<{ ok: boolean; providers: ProviderHealth[] }> {
    const configs = await this.list(actor, squadId)
    const configured = new Set(configs.map((c) => c.provider))
    const checks = [
      ...this.registry
        .all()
        .filter((p) => !configured.has(p.type))
        .map((p) => this.check(p.type, {}, null, p.type)),
      ...configs.map((c) => this.check(c.provider, c.config, c.id, c.name)),
    ]
    const providers = await Promise.all(checks)
    return { ok: providers.every((p) => p.ok), providers }
  }

  private async check(type: string, config: Record<string, unknown>, providerConfigId: string | null, name: string): Promise<ProviderHealth> {
    const provider = this.registry.get(type)
    if (!provider) return { provider: type, providerConfigId, name, ok: false, message: `provider "${type}" is not registered on this node` }
    try {
      const h = await withProviderTimeout(`${type} health`, this.timeoutMs, () => provider.health(config))
      return { provider: type, providerConfigId, name, ok: Boolean(h.ok), message: h.message ?? null }
    } catch (err) {
      return { provider: type, providerConfigId, name, ok: false, message: providerFailure(err).message }
    }
  }
}
