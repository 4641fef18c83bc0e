import { invalid } from '../../errors.js'
import type { ProjectPatch, StorageSession } from '../../contracts/storage.js'
import type { Workspace } from '../../contracts/governance.js'
import type { Project } from '../../records.js'
import { requireOperator, visibleById, type Actor } from '../foundation/actor.js'
import type { BudgetService } from '../money/budgets.js'
import type { ServiceContext } from '../foundation/context.js'
import { projectUpsert } from './governance-outbox.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import { recordActivity } from '../audit/activity-recorder.js'
import type { SquadService } from '../org/squads.js'
import { inSquad } from '../foundation/same-squad.js'

export interface CreateProjectInput {
  name: string
  description?: string | null
  status?: string
  goalId?: string | null
  budgetCents?: number | null
}

/** What a caller may change; `pausedAt` follows `pauseReason`, set by the service. */
export type UpdateProjectInput = Omit<ProjectPatch, 'pausedAt'>

export interface CreateWorkspaceInput {
  name: string
  cwd?: string | null
  repoUrl?: string | null
  repoRef?: string | null
  issueId?: string | null
  metadata?: Record<string, unknown>
}

/**
 * Projects and their execution workspaces. A project is paused while `pauseReason` is set
 * (`manual` or `budget`); a paused project takes no checkouts (409 project_paused, judged under a
 * share lock on the project row so a pause and a checkout never interleave).
 */
export class ProjectService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
    private readonly budgets: BudgetService,
  ) {}

  async visible(session: StorageSession, actor: Actor, id: string): Promise<Project> {
    return visibleById(actor, id, 'Project', (id) => session.projects.get(id))
  }

  get(actor: Actor, id: string): Promise<Project> {
    return this.visible(this.ctx.storage, actor, id)
  }

  async list(actor: Actor, squadId: string, page: { limit?: number; offset?: number } = {}): Promise<Project[]> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    return this.ctx.storage.projects.list(squadId, { limit: page.limit ?? 500, offset: page.offset ?? 0 })
  }

  async create(actor: Actor, squadId: string, input: CreateProjectInput): Promise<Project> {
    return this.ctx.storage.transaction(async (tx) => {
      await this.squads.writable(tx, actor, squadId)
      requireOperator(actor)
      const name = input.name.trim()
      if (!name) throw invalid('/name', 'name must not be blank')
      await this.checkGoal(tx, squadId, input.goalId)
      let project = await tx.projects.insert({
        id: uuidv7(),
        squadId,
        name,
        description: input.description ?? null,
        status: input.status ?? 'active',
        goalId: input.goalId ?? null,
        budgetCents: input.budgetCents ?? null,
      })
      await recordActivity(tx, actor, { squadId, action: 'project.created', entityType: 'project', entityId: project.id, details: { name, budgetCents: project.budgetCents } })
      await tx.outbox.append([projectUpsert(project)])
      // A zero budget is spent from the start.
      if (project.budgetCents !== null) project = await this.budgets.settleProject(tx, project, { budgetChanged: true, pauseSet: false, unpaused: false })
      return project
    })
  }

  async update(actor: Actor, id: string, input: UpdateProjectInput): Promise<Project> {
    return this.ctx.storage.transaction(async (tx) => {
      const current = await this.visible(tx, actor, id)
      requireOperator(actor)
      await this.squads.writable(tx, actor, current.squadId)
      const patch: ProjectPatch = {}
      if (input.name !== undefined) {
        const name = input.name.trim()
        if (!name) throw invalid('/name', 'name must not be blank')
        patch.name = name
      }
      if (input.description !== undefined) patch.description = input.description
      if (input.status !== undefined) patch.status = input.status
      if (input.goalId !== undefined) {
        await this.checkGoal(tx, current.squadId, input.goalId)
        patch.goalId = input.goalId
      }
      if (input.budgetCents !== undefined) patch.budgetCents = input.budgetCents
      let action = 'project.updated'
      if (input.pauseReason !== undefined && input.pauseReason !== current.pauseReason) {
        patch.pauseReason = input.pauseReason
        // pausedAt marks when the current pause began: set on pausing, kept when the reason
        // changes, cleared when the project is unpaused (a running project has no pause start).
        if (input.pauseReason !== null && current.pauseReason === null) patch.pausedAt = this.ctx.now()
        if (input.pauseReason === null) patch.pausedAt = null
        if (current.pauseReason === null) action = 'project.paused'
        else if (input.pauseReason === null) action = 'project.resumed'
      }
      // The pause is an UPDATE of the project row: it waits for checkouts holding the row's share
      // lock, and checkouts that come later wait for it and then see the pause.
      let project = Object.keys(patch).length ? (await tx.projects.update(id, patch))! : current
      await recordActivity(tx, actor, {
        squadId: project.squadId,
        action,
        entityType: 'project',
        entityId: project.id,
        details: {
          fields: Object.keys(patch).join(','),
          ...(patch.pauseReason !== undefined ? { pauseReason: patch.pauseReason } : {}),
          ...(patch.budgetCents !== undefined ? { budgetCents: patch.budgetCents } : {}),
        },
      })
      await tx.outbox.append([projectUpsert(project)])
      const budgetChanged = patch.budgetCents !== undefined && patch.budgetCents !== current.budgetCents
      if (budgetChanged || project.budgetCents !== null) {
        project = await this.budgets.settleProject(tx, project, {
          budgetChanged,
          pauseSet: input.pauseReason !== undefined && input.pauseReason !== null,
          unpaused: input.pauseReason === null && current.pauseReason !== null,
        })
      }
      return project
    })
  }

  async delete(actor: Actor, id: string): Promise<void> {
    await this.ctx.storage.transaction(async (tx) => {
      const project = await this.visible(tx, actor, id)
      requireOperator(actor)
      await this.squads.writable(tx, actor, project.squadId)
      // Issues keep existing without a project; workspaces go with it. Cost events keep the
      // project id they were reported with; the project's running totals are dropped.
      await tx.projects.delete(id)
      await tx.costs.deleteRollups(project.squadId, 'project', id)
      await tx.budgets.resolveIncidents({ scopeType: 'project', scopeId: id, metric: 'cents', period: 'all' })
      await recordActivity(tx, actor, { squadId: project.squadId, action: 'project.deleted', entityType: 'project', entityId: id, details: { name: project.name } })
      await tx.outbox.append([projectUpsert(project, true)])
    })
  }

  // Workspaces -------------------------------------------------------------------------------------

  async workspaces(actor: Actor, projectId: string, limit = 500): Promise<Workspace[]> {
    const project = await this.visible(this.ctx.storage, actor, projectId)
    return this.ctx.storage.workspaces.list(project.id, limit)
  }

  /** Operators and the squad's agents (which provision the workspaces they run in) register workspaces. */
  async createWorkspace(actor: Actor, projectId: string, input: CreateWorkspaceInput): Promise<Workspace> {
    const name = input.name.trim()
    if (!name) throw invalid('/name', 'name must not be blank')
    return this.ctx.storage.transaction(async (tx) => {
      const project = await this.visible(tx, actor, projectId)
      await this.squads.writable(tx, actor, project.squadId)
      if (input.issueId) {
        const found = isUuid(input.issueId) ? await tx.issues.existingIds(project.squadId, [input.issueId]) : []
        if (!found.length) throw invalid('/issueId', 'issueId must be an issue of this squad')
      }
      const workspace = await tx.workspaces.insert({
        id: uuidv7(),
        projectId: project.id,
        squadId: project.squadId,
        name,
        cwd: input.cwd ?? null,
        repoUrl: input.repoUrl ?? null,
        repoRef: input.repoRef ?? null,
        issueId: input.issueId ?? null,
        metadata: input.metadata ?? {},
      })
      await recordActivity(tx, actor, {
        squadId: project.squadId,
        action: 'workspace.created',
        entityType: 'workspace',
        entityId: workspace.id,
        details: { projectId: project.id, name, ...(workspace.issueId ? { issueId: workspace.issueId } : {}) },
      })
      return workspace
    })
  }

  private async checkGoal(tx: StorageSession, squadId: string, goalId: string | null | undefined): Promise<void> {
    if (!goalId) return
    inSquad(isUuid(goalId) ? await tx.goals.get(goalId) : undefined, squadId, '/goalId', 'goalId must be a goal of this squad')
  }
}
