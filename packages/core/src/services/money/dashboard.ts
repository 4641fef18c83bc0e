import type { Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { lifetime, monthPeriod, percentOf, utcDay } from './periods-and-models.js'
import type { SquadService } from '../org/squads.js'

/** Days of run activity on the dashboard, today (UTC) included. */
const runActivityDays = 14

interface RunActivityDay {
  date: string
  succeeded: number
  failed: number
  other: number
  total: number
}

export interface DashboardSummary {
  squadId: string
  agents: { active: number; running: number; paused: number; error: number }
  tasks: { open: number; inProgress: number; blocked: number; done: number }
  costs: {
    monthSpendCents: number
    monthBudgetCents: number | null
    monthUtilizationPercent: number
    monthInputTokens: number
    monthCachedInputTokens: number
    monthCacheWriteTokens: number
    monthOutputTokens: number
    monthUnpricedTokens: number
  }
  pendingApprovals: number
  budgets: { activeIncidents: number; pendingApprovals: number; pausedAgents: number; pausedProjects: number }
  runActivity: RunActivityDay[]
}

/**
 * The squad at a glance. Counts are live (read at request time from counters kept in the writing
 * transactions), costs cover the current UTC calendar month, run activity the last 14 UTC days.
 */
export class DashboardService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
  ) {}

  async summary(actor: Actor, squadId: string): Promise<DashboardSummary> {
    const s = this.ctx.storage
    const squad = await this.squads.visible(s, actor, squadId)
    const now = this.ctx.now()
    const period = monthPeriod(now)
    const days = lastDays(now, runActivityDays)
    const since = new Date(`${days[0]}T00:00:00.000Z`)
    const [c, runs] = await Promise.all([s.dashboard.counts(squadId, { period, incidentPeriods: [period, lifetime] }), s.dashboard.runsPerDay(squadId, since)])
    const n = (status: string) => c.issues[status] ?? 0
    const monthSpendCents = c.spend.costCents
    const byDay = new Map(days.map((date) => [date, { date, succeeded: 0, failed: 0, other: 0, total: 0 }]))
    for (const row of runs ?? []) {
      const day = byDay.get(row.date)
      if (!day) continue
      if (row.status === 'succeeded') day.succeeded += row.count
      else if (row.status === 'failed' || row.status === 'timed_out') day.failed += row.count
      else day.other += row.count
      day.total += row.count
    }
    return {
      squadId,
      agents: {
        // Idle agents count as active; terminated agents are not counted.
        active: (c.agents.active ?? 0) + (c.agents.idle ?? 0),
        running: c.agents.running ?? 0,
        paused: c.agents.paused ?? 0,
        error: c.agents.error ?? 0,
      },
      tasks: {
        open: Object.entries(c.issues).reduce((sum, [status, count]) => (status === 'done' || status === 'cancelled' ? sum : sum + count), 0),
        inProgress: n('in_progress'),
        blocked: n('blocked'),
        done: n('done'),
      },
      costs: {
        monthSpendCents,
        monthBudgetCents: squad.budgetMonthlyCents,
        monthUtilizationPercent: squad.budgetMonthlyCents === null ? 0 : percentOf(monthSpendCents, squad.budgetMonthlyCents),
        monthInputTokens: c.spend.inputTokens,
        monthCachedInputTokens: c.spend.cachedInputTokens,
        monthCacheWriteTokens: c.spend.cacheWriteTokens,
        monthOutputTokens: c.spend.outputTokens,
        monthUnpricedTokens: c.spend.unpricedTokens,
      },
      pendingApprovals: c.pendingApprovals,
      budgets: { activeIncidents: c.openIncidentBudgets, pendingApprovals: c.pendingHires, pausedAgents: c.budgetPausedAgents, pausedProjects: c.budgetPausedProjects },
      runActivity: [...byDay.values()],
    }
  }
}

/** The last `count` UTC dates, oldest first, today last. */
function lastDays(now: Date, count: number): string[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())
  return Array.from({ length: count }, (_, i) => utcDay(new Date(today - (count - 1 - i) * 86_400_000)))
}
