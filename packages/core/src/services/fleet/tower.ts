import type { BillingType } from '../../contracts/governance.js'
import type { SquadSkill } from '../../contracts/skills.js'
import type { TowerClient, TowerMode, TowerSkillsHook, TowerStatus } from '../../contracts/tower-client.js'
import { SlawError } from '../../errors.js'
import { isUuid } from '../foundation/ids.js'
import { requireOperator, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import type { IssueService } from '../work/issues.js'

const disabled: TowerStatus = {
  state: 'disabled',
  mode: null,
  towerUrl: null,
  enrollmentState: null,
  gated: false,
  instanceId: null,
  machineId: null,
  leader: false,
  lastHeartbeatAt: null,
  lastSyncAt: null,
  spoolDepth: 0,
  appliedLimitVersion: null,
  appliedSkillCatalogVersion: null,
  limit: null,
  lastError: null,
}

/**
 * The Operator's tower controls, and what the rest of core asks about the tower: whether skills
 * are managed by it, and whether its fleet limit blocks work. A thin layer over the instance's
 * TowerClient (createInstance `tower`); without one the status is `disabled` and the controls
 * answer 409 `tower_not_configured`.
 */
export class TowerService {
  private client: TowerClient | undefined
  private skillsHook: TowerSkillsHook | undefined

  constructor(
    private readonly ctx: ServiceContext,
    issues: IssueService,
  ) {
    // The fleet limit is one more ceiling on checkouts; it never replaces a local budget check.
    issues.addCheckoutGuard(async () => {
      if (await this.limitReached()) throw new SlawError('tower_limit_reached')
    })
  }

  /** Called once by createInstance with its `tower` option. */
  attach(client: TowerClient): void {
    this.client = client
  }

  /** The skill service offers its catalog store here; the tower client pulls into it. */
  useSkills(hook: TowerSkillsHook): void {
    this.skillsHook = hook
  }

  /** The hook given to the tower client (read at each use, so registration order does not matter). */
  skills(): TowerSkillsHook | undefined {
    return this.skillsHook
  }

  /** True while enrolled with a tower and connected to it: local skill authoring is then refused. */
  managesSkills(): boolean {
    return this.client?.managesSkills?.() ?? false
  }

  /** True when a hard fleet limit blocks new work (for the billing type given, or any). */
  async limitReached(billingType?: BillingType): Promise<boolean> {
    if (!this.client?.limitReached) return false
    try {
      return await this.client.limitReached(billingType)
    } catch (err) {
      // A failing figure read must not take checkouts down with it; local budgets still apply.
      this.ctx.log.warn({ err }, 'tower limit check failed')
      return false
    }
  }

  async status(actor: Actor): Promise<TowerStatus> {
    requireOperator(actor)
    if (!this.client) return disabled
    if (!this.client.status) return { ...disabled, state: 'connected' }
    return this.client.status()
  }

  async connect(actor: Actor, input: { towerUrl: string; mode?: TowerMode }): Promise<TowerStatus> {
    requireOperator(actor)
    const client = this.require('connect')
    let url: URL
    try {
      url = new URL(input.towerUrl)
    } catch {
      throw new SlawError('invalid_payload', 'towerUrl must be an absolute http(s) URL.', [{ path: '/towerUrl', message: 'must be an absolute http(s) URL' }])
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new SlawError('invalid_payload', 'towerUrl must be an absolute http(s) URL.', [{ path: '/towerUrl', message: 'must use http or https' }])
    }
    await client.connect!({ towerUrl: input.towerUrl, ...(input.mode ? { mode: input.mode } : {}) })
    return this.status(actor)
  }

  async disconnect(actor: Actor): Promise<TowerStatus> {
    requireOperator(actor)
    await this.require('disconnect').disconnect!()
    return this.status(actor)
  }

  async reEnroll(actor: Actor): Promise<TowerStatus> {
    requireOperator(actor)
    const client = this.require('reEnroll')
    await this.requireConnected(actor)
    await client.reEnroll!()
    return this.status(actor)
  }

  /** Reports now; a tower that cannot be reached answers 503 with the reason (the outbox keeps everything). */
  async syncNow(actor: Actor): Promise<TowerStatus> {
    requireOperator(actor)
    const client = this.require('syncNow')
    await this.requireConnected(actor)
    try {
      await client.syncNow!()
    } catch (err) {
      throw new SlawError('service_unavailable', `The sync did not complete: ${err instanceof Error ? err.message : String(err)}`)
    }
    return this.status(actor)
  }

  /** Installs a skill of the tower's catalog into a squad (pulling the catalog first when connected). */
  async installSkill(actor: Actor, key: string, squadId: string): Promise<SquadSkill> {
    requireOperator(actor)
    const client = this.require('refreshSkills')
    if (!isUuid(squadId)) throw new SlawError('not_found', 'Squad not found.')
    const hook = this.skillsHook
    if (!hook) throw new SlawError('invalid_state', 'This instance keeps no skill store, so tower skills cannot be installed.')
    if (client.managesSkills?.()) {
      // Best effort: an unreachable tower leaves the last pulled catalog in place.
      await client.refreshSkills!().catch((err) => this.ctx.log.warn({ err }, 'tower skill catalog pull failed'))
    }
    return hook.installSkill({ key, squadId, actor })
  }

  private async requireConnected(actor: Actor): Promise<void> {
    if ((await this.status(actor)).state === 'disconnected') throw new SlawError('invalid_state', 'No control tower is connected; POST /api/tower/connect first.')
  }

  private require(what: keyof TowerClient): TowerClient {
    const client = this.client
    if (!client) {
      throw new SlawError(
        'tower_not_configured',
        'This instance was created without a tower client; pass `tower: towerClient({...})` from @slaw/tower-client to createInstance (`slaw start` always does).',
      )
    }
    if (typeof client[what] !== 'function') throw new SlawError('tower_not_configured', `The tower client "${client.name}" does not support ${String(what)}.`)
    return client
  }
}
