import { invalid } from '../../errors.js'
import type { GoalPatch, StorageSession } from '../../contracts/storage.js'
import type { Goal, GoalStatus } from '../../records.js'
import { requireOperator, visibleById, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { uuidv7 } from '../foundation/ids.js'
import { recordActivity } from '../audit/activity-recorder.js'
import type { SquadService } from '../org/squads.js'

export interface GoalInput {
  title?: string
  description?: string | null
  status?: GoalStatus
  dueDate?: string | null
}

/** Goals: read by every key of the squad, written by Operators. Any status may follow any other. */
export class GoalService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
  ) {}

  async visible(session: StorageSession, actor: Actor, id: string): Promise<Goal> {
    return visibleById(actor, id, 'Goal', (id) => session.goals.get(id))
  }

  get(actor: Actor, id: string): Promise<Goal> {
    return this.visible(this.ctx.storage, actor, id)
  }

  async list(actor: Actor, squadId: string, page: { limit?: number; offset?: number } = {}): Promise<Goal[]> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    return this.ctx.storage.goals.list(squadId, { limit: page.limit ?? 500, offset: page.offset ?? 0 })
  }

  async create(actor: Actor, squadId: string, input: GoalInput & { title: string }): Promise<Goal> {
    return this.ctx.storage.transaction(async (tx) => {
      await this.squads.writable(tx, actor, squadId)
      requireOperator(actor)
      const title = input.title.trim()
      if (!title) throw invalid('/title', 'title must not be blank')
      if (input.dueDate) checkDate(input.dueDate)
      const goal = await tx.goals.insert({
        id: uuidv7(),
        squadId,
        title,
        description: input.description ?? null,
        status: input.status ?? 'draft',
        dueDate: input.dueDate ?? null,
      })
      await recordActivity(tx, actor, { squadId, action: 'goal.created', entityType: 'goal', entityId: goal.id, details: { title, status: goal.status } })
      return goal
    })
  }

  async update(actor: Actor, id: string, input: GoalInput): Promise<Goal> {
    return this.ctx.storage.transaction(async (tx) => {
      const current = await this.visible(tx, actor, id)
      requireOperator(actor)
      if (input.dueDate) checkDate(input.dueDate)
      await this.squads.writable(tx, actor, current.squadId)
      const patch: GoalPatch = {}
      if (input.title !== undefined) {
        const title = input.title.trim()
        if (!title) throw invalid('/title', 'title must not be blank')
        patch.title = title
      }
      if (input.description !== undefined) patch.description = input.description
      if (input.status !== undefined) patch.status = input.status
      if (input.dueDate !== undefined) patch.dueDate = input.dueDate
      const goal = Object.keys(patch).length ? (await tx.goals.update(id, patch))! : current
      await recordActivity(tx, actor, {
        squadId: goal.squadId,
        action: 'goal.updated',
        entityType: 'goal',
        entityId: goal.id,
        details: { fields: Object.keys(patch).join(','), ...(patch.status && patch.status !== current.status ? { from: current.status, to: patch.status } : {}) },
      })
      return goal
    })
  }

  async delete(actor: Actor, id: string): Promise<void> {
    await this.ctx.storage.transaction(async (tx) => {
      const goal = await this.visible(tx, actor, id)
      requireOperator(actor)
      await this.squads.writable(tx, actor, goal.squadId)
      // Issues and projects pointing at it keep existing without a goal (ON DELETE SET NULL).
      await tx.goals.delete(id)
      await recordActivity(tx, actor, { squadId: goal.squadId, action: 'goal.deleted', entityType: 'goal', entityId: id, details: { title: goal.title } })
    })
  }
}

/** `format: date` accepts 2025-02-30; a calendar check keeps impossible dates out. */
function checkDate(value: string): void {
  const d = new Date(`${value}T00:00:00Z`)
  if (Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== value) throw invalid('/dueDate', 'dueDate must be a calendar date (YYYY-MM-DD)')
}
