import { SlawError } from '../../errors.js'
import type { StorageSession } from '../../contracts/storage.js'
import type { BudgetIncident, BudgetLevel, BudgetMetric, BudgetScopeType, CostTotals, Period, RollupKey } from '../../contracts/governance.js'
import type { Agent, Project, Squad } from '../../records.js'
import { requireOperator, systemActor, type Actor } from '../foundation/actor.js'
import type { AgentService } from '../org/agents.js'
import type { ServiceContext } from '../foundation/context.js'
import { projectUpsert } from '../governance/governance-outbox.js'
import type { IssueService } from '../work/issues.js'
import { lifetime, monthPeriod, monthStart, nextMonthStart, percentOf, zeroTotals } from './periods-and-models.js'
import { outboxUpserts, recordActivity } from '../audit/activity-recorder.js'
import type { SquadService } from '../org/squads.js'
import { uuidv7 } from '../foundation/ids.js'

/** The warning threshold, in percent of a limit; the hard threshold is the limit itself. */
const softThresholdPercent = 80

/** One budget: a limit on one metric of one scope over one period, and how much of it is used. */
export interface BudgetLine {
  squadId: string
  scopeType: BudgetScopeType
  scopeId: string
  scopeName: string
  metric: BudgetMetric
  period: Period
  limit: number | null
  used: number
}

function thresholdOf(level: BudgetLevel, limit: number): number {
  return level === 'hard' ? limit : Math.ceil((limit * softThresholdPercent) / 100)
}

function reached(level: BudgetLevel, line: Pick<BudgetLine, 'limit' | 'used'>): boolean {
  return line.limit !== null && line.used >= thresholdOf(level, line.limit)
}

const levels: BudgetLevel[] = ['soft', 'hard']
/** Agent states a budget stop moves to `paused` (terminated stays terminated, paused stays as it is). */
const pausable: Agent['status'][] = ['active', 'running', 'error']
const budgetActor = systemActor('budgets')

export interface SquadBudgetView {
  budgetMonthlyCents: number | null
  spentMonthlyCents: number
  percentUsed: number
  budgetHardStop: boolean
  budgetMonthlyTokens: number | null
  spentMonthlyTokens: number
  tokenPercentUsed: number
}
export interface AgentBudgetView {
  agentId: string
  name: string
  status: Agent['status']
  pauseReason: string | null
  budgetMonthlyCents: number | null
  spentMonthlyCents: number
  percentUsed: number
  budgetMonthlyTokens: number | null
  spentMonthlyTokens: number
  tokenPercentUsed: number
}
export interface ProjectBudgetView {
  projectId: string
  name: string
  budgetCents: number | null
  spentCents: number
  percentUsed: number
  pausedAt: Date | null
  pauseReason: Project['pauseReason']
}
export interface BudgetOverview {
  squadId: string
  squadName: string
  period: Period
  periodStart: Date
  periodEnd: Date
  squad: SquadBudgetView
  agents: AgentBudgetView[]
  projects: ProjectBudgetView[]
  incidents: BudgetIncident[]
}

export interface QuotaWindow {
  scopeType: BudgetScopeType
  scopeId: string
  scopeName: string
  metric: BudgetMetric
  window: 'calendar_month_utc' | 'lifetime'
  startsAt: Date | null
  resetsAt: Date | null
  limit: number
  used: number
  remaining: number
  percentUsed: number
  status: 'ok' | 'warning' | 'exceeded'
  /** Whether reaching the limit stops work (agent and project budgets always; squad budgets with budgetHardStop). */
  hardStop: boolean
}

/** What a recorded cost event did to the rollups; the input of `afterCost`. */
export interface CostImpact {
  squad: Squad
  agent: Agent
  project: Project | null
  period: Period
  tokenLimits: { squad: number | null; agent: number | null }
  totals: Array<RollupKey & CostTotals>
  delta: CostTotals
}

/**
 * Budgets: monthly squad and agent limits in cents and (subscription-billed) tokens, lifetime
 * project limits in cents. Thresholds (80% soft, 100% hard) open incidents and write activity
 * entries once per crossing and period; hard limits stop work: checkouts answer 409
 * `budget_exhausted` (the squad's only with budgetHardStop), an agent over its budget is paused
 * with reason `budget`, a project over its budget is paused with reason `budget`.
 */
export class BudgetService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
    private readonly agents: AgentService,
    issues: IssueService,
  ) {
    issues.addCheckoutGuard((tx, input) => this.checkoutGuard(tx, input))
  }

  /** Refuses a checkout while a budget that stops work is spent (one primary-key round trip). */
  async checkoutGuard(tx: StorageSession, { issue, agent, squad }: { issue: { projectId: string | null }; agent: Agent; squad: Squad }): Promise<void> {
    const state = await tx.budgets.checkState({ squadId: squad.id, agentId: agent.id, projectId: issue.projectId, period: monthPeriod(this.ctx.now()) })
    if (squad.budgetHardStop) {
      if (reached('hard', { limit: squad.budgetMonthlyCents, used: state.squad.costCents }) || reached('hard', { limit: state.squadTokens, used: state.squad.subscriptionTokens })) {
        throw new SlawError('budget_exhausted', "The squad's monthly budget is spent; checkouts resume when an Operator raises it or next month.")
      }
    }
    if (reached('hard', { limit: agent.budgetMonthlyCents, used: state.agent.costCents }) || reached('hard', { limit: state.agentTokens, used: state.agent.subscriptionTokens })) {
      throw new SlawError('budget_exhausted', "The agent's monthly budget is spent.")
    }
    if (issue.projectId && reached('hard', { limit: state.projectBudgetCents, used: state.project.costCents })) {
      throw new SlawError('budget_exhausted', "The project's budget is spent.")
    }
  }

  // Cost events ----------------------------------------------------------------------------------

  /**
   * Runs in the cost event's transaction, right after its rollups were updated (their rows are
   * locked until commit, so concurrent events of one squad see each other's totals in order and a
   * crossing is detected by exactly one of them).
   */
  async afterCost(tx: StorageSession, impact: CostImpact): Promise<{ agent: Agent; project: Project | null }> {
    const { squad, agent, project, period, totals, delta, tokenLimits } = impact
    const find = (scope: RollupKey['scope'], key: string) => totals.find((t) => t.scope === scope && t.key === key) ?? { ...zeroTotals() }
    const squadT = find('squad', '')
    const agentT = find('agent', agent.id)
    const agentLines = this.agentLines(agent, tokenLimits.agent, agentT, period)
    const lines: BudgetLine[] = [...this.squadLines(squad, tokenLimits.squad, squadT, period), ...agentLines]
    if (project) lines.push(this.projectLine(project, find('project', project.id).costCents))
    for (const line of lines) {
      if (line.limit === null) continue
      const added = line.metric === 'cents' ? delta.costCents : delta.subscriptionTokens
      for (const level of levels) {
        const t = thresholdOf(level, line.limit)
        if (line.used - added < t && line.used >= t) await this.open(tx, line, level)
      }
    }
    // Enforcement follows the state, not only the crossing: an agent resumed by hand while over
    // its budget is paused again by its next cost event.
    // Returns the agent and project as they are now, for the next event of a batch.
    let after = { agent, project }
    if (agentLines.some((l) => reached('hard', l)) && pausable.includes(agent.status)) after = { ...after, agent: await this.pauseAgent(tx, agent, agentT.costCents) }
    if (project && !project.pauseReason && reached('hard', { limit: project.budgetCents, used: find('project', project.id).costCents }))
      after = { ...after, project: await this.pauseProject(tx, project) }
    return after
  }

  // Budget updates ---------------------------------------------------------------------------------

  async setSquadBudget(actor: Actor, squadId: string, input: { budgetMonthlyCents: number | null; budgetHardStop?: boolean; budgetMonthlyTokens?: number | null }): Promise<SquadBudgetView> {
    return this.ctx.storage.transaction(async (tx) => {
      // Visibility first: another squad's agent gets 404, this squad's agents 403.
      const before = await this.squads.visible(tx, actor, squadId)
      requireOperator(actor)
      const previousTokens = (await tx.budgets.tokenLimits(squadId)).squad
      if (input.budgetMonthlyTokens !== undefined) await tx.budgets.setSquadTokens(squadId, input.budgetMonthlyTokens)
      const squad = (await tx.squads.update(squadId, {
        budgetMonthlyCents: input.budgetMonthlyCents,
        ...(input.budgetHardStop !== undefined ? { budgetHardStop: input.budgetHardStop } : {}),
      }))!
      const tokens = input.budgetMonthlyTokens !== undefined ? input.budgetMonthlyTokens : previousTokens
      const period = monthPeriod(this.ctx.now())
      const spent = await this.monthTotals(tx, squadId, 'squad', '', period)
      await recordActivity(tx, actor, {
        squadId,
        action: 'squad.budget_updated',
        entityType: 'squad',
        entityId: squadId,
        details: {
          budgetMonthlyCents: squad.budgetMonthlyCents,
          budgetHardStop: squad.budgetHardStop,
          budgetMonthlyTokens: tokens,
          previousBudgetMonthlyCents: before.budgetMonthlyCents,
          previousBudgetMonthlyTokens: previousTokens,
        },
      })
      await tx.outbox.append([outboxUpserts.squad(squad, spent.costCents)])
      await this.reevaluate(tx, this.squadLines(squad, tokens, spent, period))
      return squadView(squad, tokens, spent)
    })
  }

  async setAgentBudget(actor: Actor, agentId: string, input: { budgetMonthlyCents: number | null; budgetMonthlyTokens?: number | null }): Promise<AgentBudgetView> {
    return this.ctx.storage.transaction(async (tx) => {
      const before = await this.agents.visible(tx, actor, agentId)
      requireOperator(actor)
      const previousTokens = (await tx.budgets.tokenLimits(before.squadId, agentId)).agent
      if (input.budgetMonthlyTokens !== undefined) await tx.budgets.setAgentTokens(agentId, input.budgetMonthlyTokens)
      let agent = (await tx.agents.update(agentId, { budgetMonthlyCents: input.budgetMonthlyCents }))!
      const tokens = input.budgetMonthlyTokens !== undefined ? input.budgetMonthlyTokens : previousTokens
      const period = monthPeriod(this.ctx.now())
      const spent = await this.monthTotals(tx, agent.squadId, 'agent', agentId, period)
      await recordActivity(tx, actor, {
        squadId: agent.squadId,
        action: 'agent.budget_updated',
        entityType: 'agent',
        entityId: agentId,
        agentId,
        details: {
          budgetMonthlyCents: agent.budgetMonthlyCents,
          budgetMonthlyTokens: tokens,
          previousBudgetMonthlyCents: before.budgetMonthlyCents,
          previousBudgetMonthlyTokens: previousTokens,
        },
      })
      await tx.outbox.append([outboxUpserts.agent(agent, spent.costCents)])
      const lines = this.agentLines(agent, tokens, spent, period)
      await this.reevaluate(tx, lines)
      const over = lines.some((l) => reached('hard', l))
      if (over && pausable.includes(agent.status)) agent = await this.pauseAgent(tx, agent, spent.costCents)
      else if (!over && agent.status === 'paused' && agent.pauseReason === 'budget') agent = await this.resumeAgent(tx, agent, spent.costCents)
      return agentView(agent, tokens, spent)
    })
  }

  /**
   * After a project was created or changed: re-judges its budget. A lowered budget that is already
   * spent pauses the project; a raised one lifts a budget pause (unless the same request set a
   * pause reason itself); unpausing by hand while the budget is spent answers 409 budget_exhausted.
   */
  async settleProject(tx: StorageSession, project: Project, change: { budgetChanged: boolean; pauseSet: boolean; unpaused: boolean }): Promise<Project> {
    const spent = (await tx.costs.rollups(project.squadId, lifetime, 'project', [project.id]))[0]?.costCents ?? 0
    const line = this.projectLine(project, spent)
    if (change.budgetChanged) await this.reevaluate(tx, [line])
    const over = reached('hard', line)
    if (over && !project.pauseReason) {
      if (change.unpaused) throw new SlawError('budget_exhausted', "The project's budget is spent; raise budgetCents to unpause it.")
      return this.pauseProject(tx, project)
    }
    if (!over && project.pauseReason === 'budget' && change.budgetChanged && !change.pauseSet) return this.resumeProject(tx, project)
    return project
  }

  // Reads ----------------------------------------------------------------------------------------

  async overview(actor: Actor, squadId: string): Promise<BudgetOverview> {
    const s = this.ctx.storage
    const squad = await this.squads.visible(s, actor, squadId)
    const now = this.ctx.now()
    const period = monthPeriod(now)
    const rows = await s.budgets.overview(squadId, { period, incidentPeriods: [period, lifetime] })
    return {
      squadId,
      squadName: squad.name,
      period,
      periodStart: monthStart(now),
      periodEnd: nextMonthStart(now),
      squad: squadView(squad, rows.squadTokens, rows.squad),
      agents: rows.agents.map((a) => ({
        agentId: a.id,
        name: a.name,
        status: a.status,
        pauseReason: a.pauseReason,
        budgetMonthlyCents: a.budgetMonthlyCents,
        spentMonthlyCents: a.spent.costCents,
        percentUsed: percentOf(a.spent.costCents, a.budgetMonthlyCents),
        budgetMonthlyTokens: a.budgetMonthlyTokens,
        spentMonthlyTokens: a.spent.subscriptionTokens,
        tokenPercentUsed: percentOf(a.spent.subscriptionTokens, a.budgetMonthlyTokens),
      })),
      projects: rows.projects.map((p) => ({
        projectId: p.id,
        name: p.name,
        budgetCents: p.budgetCents,
        spentCents: p.spentCents,
        percentUsed: percentOf(p.spentCents, p.budgetCents),
        pausedAt: p.pausedAt,
        pauseReason: p.pauseReason,
      })),
      incidents: rows.incidents,
    }
  }

  /** Every configured budget as a quota window: its period, limit, use and state. */
  async quotaWindows(actor: Actor, squadId: string): Promise<{ period: Period; windows: QuotaWindow[] }> {
    const o = await this.overview(actor, squadId)
    const monthly = { window: 'calendar_month_utc' as const, startsAt: o.periodStart, resetsAt: o.periodEnd }
    const forever = { window: 'lifetime' as const, startsAt: null, resetsAt: null }
    const windows: QuotaWindow[] = []
    const add = (base: Omit<QuotaWindow, 'remaining' | 'percentUsed' | 'status' | 'limit'> & { limit: number | null }) => {
      if (base.limit === null) return
      const line = { limit: base.limit, used: base.used }
      windows.push({
        ...base,
        limit: base.limit,
        remaining: Math.max(0, base.limit - base.used),
        percentUsed: percentOf(base.used, base.limit),
        status: reached('hard', line) ? 'exceeded' : reached('soft', line) ? 'warning' : 'ok',
      })
    }
    add({
      scopeType: 'squad',
      scopeId: squadId,
      scopeName: o.squadName,
      metric: 'cents',
      ...monthly,
      limit: o.squad.budgetMonthlyCents,
      used: o.squad.spentMonthlyCents,
      hardStop: o.squad.budgetHardStop,
    })
    add({
      scopeType: 'squad',
      scopeId: squadId,
      scopeName: o.squadName,
      metric: 'tokens',
      ...monthly,
      limit: o.squad.budgetMonthlyTokens,
      used: o.squad.spentMonthlyTokens,
      hardStop: o.squad.budgetHardStop,
    })
    for (const a of o.agents) {
      add({ scopeType: 'agent', scopeId: a.agentId, scopeName: a.name, metric: 'cents', ...monthly, limit: a.budgetMonthlyCents, used: a.spentMonthlyCents, hardStop: true })
      add({ scopeType: 'agent', scopeId: a.agentId, scopeName: a.name, metric: 'tokens', ...monthly, limit: a.budgetMonthlyTokens, used: a.spentMonthlyTokens, hardStop: true })
    }
    for (const p of o.projects) add({ scopeType: 'project', scopeId: p.projectId, scopeName: p.name, metric: 'cents', ...forever, limit: p.budgetCents, used: p.spentCents, hardStop: true })
    return { period: o.period, windows }
  }

  // Internals ------------------------------------------------------------------------------------

  private async monthTotals(tx: StorageSession, squadId: string, scope: 'squad' | 'agent', key: string, period: Period): Promise<CostTotals> {
    return (await tx.costs.rollups(squadId, period, scope, [key]))[0] ?? zeroTotals()
  }

  private squadLines(squad: Squad, tokens: number | null, spent: CostTotals, period: Period): BudgetLine[] {
    const base = { squadId: squad.id, scopeType: 'squad' as const, scopeId: squad.id, scopeName: squad.name, period }
    return [
      { ...base, metric: 'cents', limit: squad.budgetMonthlyCents, used: spent.costCents },
      { ...base, metric: 'tokens', limit: tokens, used: spent.subscriptionTokens },
    ]
  }

  private agentLines(agent: Agent, tokens: number | null, spent: CostTotals, period: Period): BudgetLine[] {
    const base = { squadId: agent.squadId, scopeType: 'agent' as const, scopeId: agent.id, scopeName: agent.name, period }
    return [
      { ...base, metric: 'cents', limit: agent.budgetMonthlyCents, used: spent.costCents },
      { ...base, metric: 'tokens', limit: tokens, used: spent.subscriptionTokens },
    ]
  }

  private projectLine(project: Project, spentCents: number): BudgetLine {
    return { squadId: project.squadId, scopeType: 'project', scopeId: project.id, scopeName: project.name, metric: 'cents', period: lifetime, limit: project.budgetCents, used: spentCents }
  }

  /** After a limit changed: opens incidents for levels now reached, resolves those no longer reached. */
  private async reevaluate(tx: StorageSession, lines: BudgetLine[]): Promise<void> {
    for (const line of lines) {
      const gone = levels.filter((level) => !reached(level, line))
      if (gone.length) await tx.budgets.resolveIncidents({ scopeType: line.scopeType, scopeId: line.scopeId, metric: line.metric, period: line.period, levels: gone })
      for (const level of levels) if (reached(level, line)) await this.open(tx, line, level)
    }
  }

  /** Opens an incident; the activity entry is written only when this call opened it (once per crossing). */
  private async open(tx: StorageSession, line: BudgetLine, level: BudgetLevel): Promise<void> {
    const incident = await tx.budgets.openIncident({
      id: uuidv7(),
      squadId: line.squadId,
      scopeType: line.scopeType,
      scopeId: line.scopeId,
      metric: line.metric,
      level,
      period: line.period,
      limitAmount: line.limit!,
      observedAmount: line.used,
    })
    if (!incident) return
    await recordActivity(tx, budgetActor, {
      squadId: line.squadId,
      action: level === 'hard' ? 'budget.hard_threshold_crossed' : 'budget.soft_threshold_crossed',
      entityType: line.scopeType,
      entityId: line.scopeId,
      agentId: line.scopeType === 'agent' ? line.scopeId : null,
      details: {
        incidentId: incident.id,
        scopeType: line.scopeType,
        scopeId: line.scopeId,
        scopeName: line.scopeName,
        metric: line.metric,
        level,
        thresholdPercent: level === 'hard' ? 100 : softThresholdPercent,
        limit: line.limit!,
        observed: line.used,
        period: line.period,
      },
    })
  }

  private async pauseAgent(tx: StorageSession, agent: Agent, spentCents: number): Promise<Agent> {
    // Conditional: concurrent cost transactions (two batches, two nodes) may all see the agent
    // still running; the first pause wins, the others change nothing and announce nothing.
    const paused = await tx.agents.update(agent.id, { status: 'paused', pauseReason: 'budget' }, { whenStatus: pausable })
    if (!paused) return (await tx.agents.get(agent.id)) ?? agent
    await recordActivity(tx, budgetActor, {
      squadId: agent.squadId,
      action: 'agent.paused',
      entityType: 'agent',
      entityId: agent.id,
      agentId: agent.id,
      details: { reason: 'budget', from: agent.status },
      outbox: [outboxUpserts.agent(paused, spentCents)],
    })
    return paused
  }

  private async resumeAgent(tx: StorageSession, agent: Agent, spentCents: number): Promise<Agent> {
    const squad = await tx.squads.get(agent.squadId)
    // An archived squad keeps its agents paused whatever their budgets say.
    if (squad?.status === 'archived') return agent
    const resumed = (await tx.agents.update(agent.id, { status: 'active', pauseReason: null }))!
    await recordActivity(tx, budgetActor, { squadId: agent.squadId, action: 'agent.resumed', entityType: 'agent', entityId: agent.id, agentId: agent.id, details: { reason: 'budget' } })
    await tx.outbox.append([outboxUpserts.agent(resumed, spentCents)])
    return resumed
  }

  private async pauseProject(tx: StorageSession, project: Project): Promise<Project> {
    const paused = (await tx.projects.update(project.id, { pauseReason: 'budget', pausedAt: this.ctx.now() }))!
    await recordActivity(tx, budgetActor, { squadId: project.squadId, action: 'project.paused', entityType: 'project', entityId: project.id, details: { reason: 'budget' } })
    await tx.outbox.append([projectUpsert(paused)])
    return paused
  }

  private async resumeProject(tx: StorageSession, project: Project): Promise<Project> {
    const resumed = (await tx.projects.update(project.id, { pauseReason: null, pausedAt: null }))!
    await recordActivity(tx, budgetActor, { squadId: project.squadId, action: 'project.resumed', entityType: 'project', entityId: project.id, details: { reason: 'budget' } })
    await tx.outbox.append([projectUpsert(resumed)])
    return resumed
  }
}

function squadView(squad: Squad, tokens: number | null, spent: CostTotals): SquadBudgetView {
  return {
    budgetMonthlyCents: squad.budgetMonthlyCents,
    spentMonthlyCents: spent.costCents,
    percentUsed: percentOf(spent.costCents, squad.budgetMonthlyCents),
    budgetHardStop: squad.budgetHardStop,
    budgetMonthlyTokens: tokens,
    spentMonthlyTokens: spent.subscriptionTokens,
    tokenPercentUsed: percentOf(spent.subscriptionTokens, tokens),
  }
}

function agentView(agent: Agent, tokens: number | null, spent: CostTotals): AgentBudgetView {
  return {
    agentId: agent.id,
    name: agent.name,
    status: agent.status,
    pauseReason: agent.pauseReason,
    budgetMonthlyCents: agent.budgetMonthlyCents,
    spentMonthlyCents: spent.costCents,
    percentUsed: percentOf(spent.costCents, agent.budgetMonthlyCents),
    budgetMonthlyTokens: tokens,
    spentMonthlyTokens: spent.subscriptionTokens,
    tokenPercentUsed: percentOf(spent.subscriptionTokens, tokens),
  }
}
