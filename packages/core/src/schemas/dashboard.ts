import { Type } from '@sinclair/typebox'
import { Nullable, Uuid } from './common.js'

const Count = Type.Integer({ minimum: 0 })

export const DashboardSchema = Type.Object(
  {
    squadId: Uuid,
    agents: Type.Object({ active: Count, running: Count, paused: Count, error: Count }),
    tasks: Type.Object({ open: Count, inProgress: Count, blocked: Count, done: Count }),
    costs: Type.Object({
      monthSpendCents: Type.Integer(),
      monthBudgetCents: Nullable(Type.Integer()),
      monthUtilizationPercent: Type.Number(),
      /** This month's tokens beside its cents: input (uncached), cached input, cache writes, output. */
      monthInputTokens: Count,
      monthCachedInputTokens: Count,
      monthCacheWriteTokens: Count,
      monthOutputTokens: Count,
      /** Tokens nobody priced: spend that monthSpendCents does not show. */
      monthUnpricedTokens: Count,
    }),
    pendingApprovals: Count,
    budgets: Type.Object({ activeIncidents: Count, pendingApprovals: Count, pausedAgents: Count, pausedProjects: Count }),
    runActivity: Type.Array(Type.Object({ date: Type.String({ format: 'date' }), succeeded: Count, failed: Count, other: Count, total: Count })),
  },
  { $id: 'DashboardSummary', title: 'DashboardSummary' },
)
