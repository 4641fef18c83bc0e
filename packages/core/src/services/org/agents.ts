import { SlawError, invalid, notFound } from '../../errors.js'
import { UniqueViolation, type AgentPatch, type StorageSession } from '../../contracts/storage.js'
import type { Agent, ApiKeyRecord } from '../../records.js'
import { isPrivileged, requireOperator, visibleById, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { hashToken, isUuid, newToken, uuidv7 } from '../foundation/ids.js'
import { mergeAdapterConfig, validateAdapterConfig } from './agent-adapter-config.js'
import { outboxUpserts, recordActivity } from '../audit/activity-recorder.js'
import type { SquadService } from './squads.js'
import { checkName } from '../foundation/names.js'
import { inSquad } from '../foundation/same-squad.js'

export interface CreateAgentInput {
  name: string
  role: string
  adapterType: string
  title?: string | null
  reportsToAgentId?: string | null
  prompt?: string | null
  desiredSkills?: string[]
  /** How the adapter reaches the agent (Operator only; docs/heartbeats.md: adapterConfig). */
  adapterConfig?: Record<string, unknown>
}

export interface UpdateAgentInput {
  name?: string
  title?: string | null
  prompt?: string | null
  status?: 'active' | 'paused'
  /** Merged into the stored config (top-level keys; null removes one) unless `replaceAdapterConfig`. */
  adapterConfig?: Record<string, unknown>
  replaceAdapterConfig?: boolean
}

/** An agent as created: `webhookSecret` is set once, for an agent of an adapter that signs wakes. */
export interface CreatedAgent extends Agent {
  webhookSecret?: string
}

/** Adapter types whose wakes are signed with a per-agent webhook secret. */
const signedAdapterTypes = new Set(['http'])

export class AgentService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
  ) {}

  async visible(session: StorageSession, actor: Actor, agentId: string): Promise<Agent> {
    return visibleById(actor, agentId, 'Agent', (id) => session.agents.get(id))
  }

  /**
   * An agent for an Operator-only action. Visibility comes first, so another squad's agent key gets
   * 404 (docs/authorization.md: ids do not leak), and its own squad's agent key gets 403.
   */
  private async managed(session: StorageSession, actor: Actor, agentId: string): Promise<Agent> {
    const agent = await this.visible(session, actor, agentId)
    requireOperator(actor)
    return agent
  }

  get(actor: Actor, agentId: string): Promise<Agent> {
    return this.visible(this.ctx.storage, actor, agentId)
  }

  async list(actor: Actor, squadId: string): Promise<Agent[]> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    return this.ctx.storage.agents.list(squadId)
  }

  async me(actor: Actor): Promise<{ agent: Agent; chainOfCommand: Array<Pick<Agent, 'id' | 'name' | 'role'>> }> {
    if (actor.type !== 'agent') throw new SlawError('forbidden', 'Only an agent key has an identity to show.')
    const agent = await this.visible(this.ctx.storage, actor, actor.agentId)
    return { agent, chainOfCommand: await this.ctx.storage.agents.chainOfCommand(agent.id) }
  }

  async create(actor: Actor, squadId: string, input: CreateAgentInput): Promise<CreatedAgent> {
    return this.ctx.storage.transaction(async (tx) => {
      await this.squads.visible(tx, actor, squadId)
      requireOperator(actor)
      return this.createIn(tx, actor, squadId, input)
    })
  }

  /** Creation inside a caller's transaction (direct create, and an approved hire). */
  async createIn(tx: StorageSession, actor: Actor, squadId: string, input: CreateAgentInput): Promise<CreatedAgent> {
    await this.squads.writable(tx, actor, squadId)
    const name = checkName('/name', input.name)
    const role = input.role.trim()
    if (!role) throw invalid('/role', 'role must not be blank')
    if (!this.ctx.adapters.has(input.adapterType)) {
      throw invalid('/adapterType', `adapterType must be one of: ${[...this.ctx.adapters.keys()].join(', ') || '(none registered)'}`)
    }
    // adapterConfig is optional in the create body, so many clients (and the shared bench)
    // create agents without one: such an agent is unconfigured until PATCHed, and its wakes fail with
    // a sentence naming the missing setting. A config that is given is checked in full.
    const adapterConfig = input.adapterConfig ?? {}
    if (input.adapterConfig !== undefined) validateAdapterConfig(this.ctx, actor, input.adapterType, adapterConfig)
    if (input.reportsToAgentId) {
      const manager = isUuid(input.reportsToAgentId) ? await tx.agents.get(input.reportsToAgentId) : undefined
      inSquad(manager, squadId, '/reportsToAgentId', 'reportsToAgentId must be an agent of this squad')
    }
    let agent: Agent
    try {
      agent = await tx.agents.insert({
        id: uuidv7(),
        squadId,
        name,
        role,
        title: input.title ?? null,
        adapterType: input.adapterType,
        reportsToAgentId: input.reportsToAgentId ?? null,
        prompt: input.prompt ?? null,
        desiredSkills: input.desiredSkills ?? [],
        adapterConfig,
      })
    } catch (err) {
      if (err instanceof UniqueViolation && err.constraint === 'agents_squad_name') throw new SlawError('agent_name_taken')
      throw err
    }
    await recordActivity(tx, actor, {
      squadId,
      action: 'agent.created',
      entityType: 'agent',
      entityId: agent.id,
      agentId: agent.id,
      details: { name: agent.name, role: agent.role, adapterType: agent.adapterType },
    })
    await tx.outbox.append([outboxUpserts.agent(agent)])
    if (signedAdapterTypes.has(agent.adapterType)) return { ...agent, webhookSecret: await this.newWebhookSecret(tx, agent.id) }
    return agent
  }

  /** A fresh webhook signing secret, stored encrypted under the master key; the plain value is shown once. */
  private async newWebhookSecret(tx: StorageSession, agentId: string): Promise<string> {
    const secret = newToken('slaw_whsec')
    await tx.agents.setWebhookSecret(agentId, this.ctx.masterKey.encrypt(secret, `webhook-secret:${agentId}`))
    return secret
  }

  /** POST /api/agents/{id}/webhook-secret/rotate (Operator): a new secret, shown once; the old one stops signing at once. */
  async rotateWebhookSecret(actor: Actor, agentId: string): Promise<string> {
    return this.ctx.storage.transaction(async (tx) => {
      const agent = await this.managed(tx, actor, agentId)
      if (agent.status === 'terminated') throw new SlawError('invalid_state', 'A terminated agent gets no new secret.')
      const secret = await this.newWebhookSecret(tx, agent.id)
      await recordActivity(tx, actor, { squadId: agent.squadId, action: 'agent.webhook_secret_rotated', entityType: 'agent', entityId: agent.id, agentId: agent.id, details: {} })
      return secret
    })
  }

  async update(actor: Actor, agentId: string, input: UpdateAgentInput): Promise<Agent> {
    return this.ctx.storage.transaction(async (tx) => {
      const current = await this.managed(tx, actor, agentId)
      const patch: AgentPatch = {}
      if (input.name !== undefined) {
        const name = checkName('/name', input.name)
        patch.name = name
      }
      if (input.title !== undefined) patch.title = input.title
      if (input.prompt !== undefined) patch.prompt = input.prompt
      if (input.adapterConfig !== undefined || input.replaceAdapterConfig) {
        const next = mergeAdapterConfig(current.adapterConfig, input.adapterConfig ?? {}, input.replaceAdapterConfig === true)
        validateAdapterConfig(this.ctx, actor, current.adapterType, next)
        patch.adapterConfig = next
      }
      if (input.status !== undefined && input.status !== current.status) {
        await this.assertStatusChange(tx, current, input.status)
        patch.status = input.status
        patch.pauseReason = input.status === 'paused' ? 'manual' : null
      }
      return this.apply(tx, actor, current, patch, 'agent.updated')
    })
  }

  async setStatus(actor: Actor, agentId: string, action: 'pause' | 'resume' | 'terminate'): Promise<void> {
    const terminated = await this.ctx.storage.transaction(async (tx) => {
      const current = await this.managed(tx, actor, agentId)
      if (action === 'terminate') {
        if (current.status === 'terminated') return false
        await tx.issues.unassignAgent(agentId)
        await this.apply(tx, actor, current, { status: 'terminated', pauseReason: null }, 'agent.terminated')
        return true
      }
      const next = action === 'pause' ? 'paused' : 'active'
      if (current.status === next) return false
      await this.assertStatusChange(tx, current, next)
      await this.apply(tx, actor, current, { status: next, pauseReason: next === 'paused' ? 'manual' : null }, `agent.${action === 'pause' ? 'paused' : 'resumed'}`)
      return false
    })
    // After the commit: a request that re-read the agent before it would cache the old status again.
    if (terminated) this.ctx.principalsChanged()
  }

  private async assertStatusChange(tx: StorageSession, agent: Agent, next: 'active' | 'paused'): Promise<void> {
    if (agent.status === 'terminated') throw new SlawError('invalid_state', 'A terminated agent stays terminated.')
    if (next === 'active') {
      const squad = await tx.squads.get(agent.squadId)
      if (squad?.status === 'archived') throw new SlawError('squad_archived')
      if (agent.pauseReason === 'budget') throw new SlawError('budget_exhausted', 'The agent is paused over its budget; raise the budget to resume it.')
    }
  }

  async apply(tx: StorageSession, actor: Actor, current: Agent, patch: AgentPatch, action: string, details?: Record<string, unknown>): Promise<Agent> {
    let agent: Agent
    try {
      agent = (await tx.agents.update(current.id, patch))!
    } catch (err) {
      if (err instanceof UniqueViolation && err.constraint === 'agents_squad_name') throw new SlawError('agent_name_taken')
      throw err
    }
    await recordActivity(tx, actor, {
      squadId: agent.squadId,
      action,
      entityType: 'agent',
      entityId: agent.id,
      agentId: agent.id,
      details: details ?? changedFields(patch),
    })
    await tx.outbox.append([outboxUpserts.agent(agent)])
    return agent
  }

  async delete(actor: Actor, agentId: string): Promise<void> {
    await this.ctx.storage.transaction(async (tx) => {
      const agent = await this.managed(tx, actor, agentId)
      await tx.issues.unassignAgent(agentId)
      await recordActivity(tx, actor, { squadId: agent.squadId, action: 'agent.deleted', entityType: 'agent', entityId: agentId, agentId: null, details: { name: agent.name } })
      await tx.outbox.append([outboxUpserts.agent(agent, 0, true)])
      await tx.agents.delete(agentId)
    })
    this.ctx.principalsChanged()
  }

  async setPermissions(actor: Actor, agentId: string, permissions: Record<string, unknown>): Promise<Agent> {
    return this.ctx.storage.transaction(async (tx) => {
      const current = await this.managed(tx, actor, agentId)
      return this.apply(tx, actor, current, { permissions }, 'agent.permissions_updated', { keys: Object.keys(permissions).join(',') })
    })
  }

  async setInstructionsPath(actor: Actor, agentId: string, instructionsPath: string): Promise<Agent> {
    return this.ctx.storage.transaction(async (tx) => {
      const current = await this.managed(tx, actor, agentId)
      const path = repoRelativePath(instructionsPath)
      return this.apply(tx, actor, current, { instructionsPath: path }, 'agent.instructions_path_updated', { instructionsPath: path })
    })
  }

  /** The agent itself or an Operator. */
  private assertSelfOrOperator(actor: Actor, agentId: string): void {
    if (!isPrivileged(actor) && !(actor.type === 'agent' && actor.agentId === agentId)) throw new SlawError('forbidden')
  }

  async runtimeState(actor: Actor, agentId: string): Promise<{ agentId: string; status: Agent['status']; pauseReason: string | null; state: Record<string, unknown>; updatedAt: Date }> {
    const agent = await this.visible(this.ctx.storage, actor, agentId)
    this.assertSelfOrOperator(actor, agentId)
    return { agentId: agent.id, status: agent.status, pauseReason: agent.pauseReason, state: agent.runtimeState, updatedAt: agent.updatedAt }
  }

  async resetSession(actor: Actor, agentId: string): Promise<void> {
    await this.ctx.storage.transaction(async (tx) => {
      const current = await this.visible(tx, actor, agentId)
      this.assertSelfOrOperator(actor, agentId)
      await this.apply(tx, actor, current, { runtimeState: {} }, 'agent.session_reset', {})
    })
  }

  // Keys ---------------------------------------------------------------------------------------

  async listKeys(actor: Actor, agentId: string): Promise<ApiKeyRecord[]> {
    await this.managed(this.ctx.storage, actor, agentId)
    return (await this.ctx.storage.keys.listForAgent(agentId)).filter((k) => !k.revokedAt)
  }

  async createKey(actor: Actor, agentId: string, input: { name: string; expiresAt?: string }): Promise<{ key: ApiKeyRecord; token: string }> {
    return this.ctx.storage.transaction(async (tx) => {
      const agent = await this.managed(tx, actor, agentId)
      const name = input.name.trim()
      if (!name) throw invalid('/name', 'name must not be blank')
      let expiresAt: Date | null = null
      if (input.expiresAt !== undefined) {
        expiresAt = new Date(input.expiresAt)
        if (Number.isNaN(expiresAt.getTime())) throw invalid('/expiresAt', 'expiresAt must be an ISO 8601 timestamp')
        if (expiresAt.getTime() <= this.ctx.now().getTime()) throw invalid('/expiresAt', 'expiresAt must be in the future')
      }
      if (agent.status === 'terminated') throw new SlawError('invalid_state', 'A terminated agent gets no new keys.')
      const token = newToken('slaw_ak')
      const key = await tx.keys.insert({ id: uuidv7(), kind: 'agent', name, agentId, squadId: agent.squadId, tokenHash: hashToken(token), expiresAt })
      await recordActivity(tx, actor, { squadId: agent.squadId, action: 'agent.key_created', entityType: 'agent', entityId: agentId, agentId, details: { keyId: key.id, name } })
      return { key, token }
    })
  }

  async revokeKey(actor: Actor, agentId: string, keyId: string): Promise<void> {
    await this.ctx.storage.transaction(async (tx) => {
      const agent = await this.managed(tx, actor, agentId)
      const key = isUuid(keyId) ? (await tx.keys.listForAgent(agentId)).find((k) => k.id === keyId && !k.revokedAt) : undefined
      if (!key) throw notFound('Key')
      await tx.keys.revoke(keyId)
      await recordActivity(tx, actor, { squadId: agent.squadId, action: 'agent.key_revoked', entityType: 'agent', entityId: agentId, agentId, details: { keyId } })
    })
    this.ctx.principalsChanged()
  }
}

/**
 * A repo-relative path: not absolute (POSIX, Windows drive, UNC or home), no `..` segment, no NUL.
 * Returns it trimmed.
 */
function repoRelativePath(input: string): string {
  const path = input.trim()
  const posix = path.replace(/\\/g, '/')
  const bad = !path || posix.startsWith('/') || posix.startsWith('~') || /^[a-z]:/i.test(posix) || path.includes('\0') || posix.split('/').includes('..')
  if (bad) throw invalid('/instructionsPath', 'instructionsPath must be a repo-relative path without ".." (not absolute)')
  return path
}

function changedFields(patch: object): Record<string, unknown> {
  // Prompts can be long and private: record that they changed, not what they say.
  const out: Record<string, unknown> = {}
  // Adapter config is Operator-only (bindings, URLs, headers): activity records only that it changed.
  for (const [k, v] of Object.entries(patch)) out[k] = k === 'prompt' || k === 'runtimeState' || k === 'permissions' || k === 'adapterConfig' ? '(changed)' : v
  return out
}
