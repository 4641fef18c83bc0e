import { invalid } from '../../errors.js'
import type { ActivityEntry, ActorType } from '../../records.js'
import { requireOperator, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import { redact } from '../foundation/redact.js'
import type { SquadService } from '../org/squads.js'
import { inSquad } from '../foundation/same-squad.js'

/** The activity list's server maximum (default 100, clamped to 500; docs/governance.md). */
const activityLimitMax = 500

export class ActivityService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
  ) {}

  async list(actor: Actor, squadId: string, filter: { agentId?: string; entityType?: string; entityId?: string; limit?: number }): Promise<ActivityEntry[]> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    if (filter.agentId !== undefined && !isUuid(filter.agentId)) throw invalid('/agentId', 'agentId must be a UUID')
    return this.ctx.storage.activity.list({
      squadId,
      ...(filter.agentId ? { agentId: filter.agentId } : {}),
      ...(filter.entityType ? { entityType: filter.entityType } : {}),
      ...(filter.entityId ? { entityId: filter.entityId } : {}),
      limit: Math.min(Math.max(filter.limit ?? 100, 1), activityLimitMax),
    })
  }

  /** An Operator writes an entry by hand; sensitive values in `details` are redacted on write. */
  async create(
    actor: Actor,
    squadId: string,
    input: { actorId: string; action: string; entityType: string; entityId: string; actorType?: ActorType; agentId?: string | null; details?: Record<string, unknown> | null },
  ): Promise<ActivityEntry> {
    return this.ctx.storage.transaction(async (tx) => {
      await this.squads.visible(tx, actor, squadId)
      requireOperator(actor)
      if (input.agentId) {
        inSquad(await tx.agents.get(input.agentId), squadId, '/agentId', 'agentId must be an agent of this squad')
      }
      return tx.activity.insert({
        id: uuidv7(),
        squadId,
        actorType: input.actorType ?? 'system',
        actorId: input.actorId,
        action: input.action,
        entityType: input.entityType,
        entityId: input.entityId,
        agentId: input.agentId ?? null,
        runId: null,
        details: input.details ? redact(input.details) : null,
      })
    })
  }
}
