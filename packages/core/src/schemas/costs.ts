import { Type, type Static } from '@sinclair/typebox'
import { BudgetIncidentRecord, CostEventRecord, type BudgetIncident, type CostEvent } from '../contracts/governance.js'
import type { BudgetOverview, ProjectBudgetView, QuotaWindow } from '../services/money/budgets.js'
import type { CostSummary, MonthBreakdown, SpendWindow } from '../services/money/costs.js'
import { Nullable, Timestamp, Uuid, iso, isoOrNull } from './common.js'

/** Cents and tokens per event: non-negative integers, capped far above any real bill. */
const Amount = Type.Integer({ minimum: 0, maximum: 1_000_000_000_000 })
const Limit = Nullable(Type.Integer({ minimum: 0, maximum: 1_000_000_000_000_000 }))
const BillingType = CostEventRecord.properties.billingType

export const CostEventSchema = Type.Object(CostEventRecord.properties, { $id: 'CostEvent', title: 'CostEvent' })

const Name = (max: number) => Type.String({ minLength: 1, maxLength: max, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' })
export const RecordCostBody = Type.Object(
  {
    agentId: Uuid,
    model: Type.String({ minLength: 1, maxLength: 200 }),
    inputTokens: Amount,
    outputTokens: Amount,
    costCents: Amount,
    cachedInputTokens: Type.Optional(Amount),
    cacheWriteTokens: Type.Optional(Amount),
    /** `unpriced`: nobody knows what it cost (costCents must then be 0); default `reported`. */
    costStatus: Type.Optional(CostEventRecord.properties.costStatus),
    billingCode: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    issueId: Type.Optional(Nullable(Uuid)),
    provider: Type.Optional(Name(64)),
    biller: Type.Optional(Nullable(Name(64))),
    billingType: Type.Optional(BillingType),
  },
  { additionalProperties: false },
)

const totals = {
  costCents: Type.Integer(),
  inputTokens: Type.Integer(),
  cachedInputTokens: Type.Integer(),
  outputTokens: Type.Integer(),
  subscriptionTokens: Type.Integer(),
  events: Type.Integer(),
  cacheWriteTokens: Type.Integer(),
  /** Tokens of unpriced events: spend `costCents` does not include. */
  unpricedTokens: Type.Integer(),
}

export const CostSummarySchema = Type.Object(
  {
    totalCents: Type.Integer(),
    ...totals,
    period: Type.Literal('mtd'),
    month: Type.String(),
    periodStart: Timestamp,
    periodEnd: Timestamp,
  },
  { $id: 'CostSummary', title: 'CostSummary' },
)
export const AgentCostRow = Type.Object({ agentId: Uuid, name: Nullable(Type.String()), ...totals }, { $id: 'AgentCostRow', title: 'AgentCostRow' })
export const ProviderCostRow = Type.Object({ provider: Type.String(), ...totals }, { $id: 'ProviderCostRow', title: 'ProviderCostRow' })
export const SpendWindowSchema = Type.Object(
  {
    window: Type.String(),
    hours: Type.Integer(),
    startsAt: Timestamp,
    endsAt: Timestamp,
    ...totals,
    providers: Type.Array(ProviderCostRow),
  },
  { $id: 'SpendWindow', title: 'SpendWindow' },
)

/** A month other than the current one, for the breakdowns by day and by model. */
export const CostMonthQuery = Type.Object({
  month: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{3}-(0[1-9]|1[0-2])$', description: 'A UTC month, `YYYY-MM`; default the current one.' })),
})
const monthBounds = { month: Type.String(), periodStart: Timestamp, periodEnd: Timestamp }
const DayCostRow = Type.Object({ day: Type.String({ description: 'A UTC day, `YYYY-MM-DD`.' }), ...totals }, { $id: 'DayCostRow', title: 'DayCostRow' })
const ModelCostRow = Type.Object({ provider: Type.String(), model: Type.String(), billingType: BillingType, ...totals }, { $id: 'ModelCostRow', title: 'ModelCostRow' })
export const DayCosts = Type.Object({ ...monthBounds, days: Type.Array(DayCostRow) }, { $id: 'DayCosts', title: 'DayCosts' })
export const ModelCosts = Type.Object({ ...monthBounds, models: Type.Array(ModelCostRow) }, { $id: 'ModelCosts', title: 'ModelCosts' })
export const presentMonth = <T extends MonthBreakdown>(m: T) => ({ ...m, periodStart: iso(m.periodStart), periodEnd: iso(m.periodEnd) })

export const IssueCostSummary = Type.Object(
  { issueId: Uuid, identifier: Type.String(), totalCents: Type.Integer(), ...totals, period: Type.Literal('all') },
  { $id: 'IssueCostSummary', title: 'IssueCostSummary' },
)

// Budgets ----------------------------------------------------------------------------------------

export const SquadBudgetBody = Type.Object({ budgetMonthlyCents: Limit, budgetHardStop: Type.Optional(Type.Boolean()), budgetMonthlyTokens: Type.Optional(Limit) }, { additionalProperties: false })
export const AgentBudgetBody = Type.Object({ budgetMonthlyCents: Limit, budgetMonthlyTokens: Type.Optional(Limit) }, { additionalProperties: false })

export const SquadBudgetSchema = Type.Object(
  {
    budgetMonthlyCents: Nullable(Type.Integer()),
    spentMonthlyCents: Type.Integer(),
    percentUsed: Type.Number(),
    budgetHardStop: Type.Boolean(),
    budgetMonthlyTokens: Nullable(Type.Integer()),
    spentMonthlyTokens: Type.Integer(),
    tokenPercentUsed: Type.Number(),
  },
  { $id: 'SquadBudget', title: 'SquadBudget' },
)
export const AgentBudgetSchema = Type.Object(
  {
    agentId: Uuid,
    name: Type.String(),
    status: Type.String(),
    pauseReason: Nullable(Type.String()),
    budgetMonthlyCents: Nullable(Type.Integer()),
    spentMonthlyCents: Type.Integer(),
    percentUsed: Type.Number(),
    budgetMonthlyTokens: Nullable(Type.Integer()),
    spentMonthlyTokens: Type.Integer(),
    tokenPercentUsed: Type.Number(),
  },
  { $id: 'AgentBudget', title: 'AgentBudget' },
)
const ProjectBudgetSchema = Type.Object(
  {
    projectId: Uuid,
    name: Type.String(),
    budgetCents: Nullable(Type.Integer()),
    spentCents: Type.Integer(),
    percentUsed: Type.Number(),
    pausedAt: Nullable(Timestamp),
    pauseReason: Nullable(Type.String()),
  },
  { $id: 'ProjectBudget', title: 'ProjectBudget' },
)
// Scope type, metric and level are documented as plain strings, as they always were.
export const IncidentSchema = Type.Object(
  {
    ...Type.Pick(BudgetIncidentRecord, ['id', 'scopeType', 'scopeId', 'metric', 'level', 'period', 'limitAmount', 'observedAmount', 'createdAt']).properties,
    scopeType: Type.String(),
    metric: Type.String(),
    level: Type.String(),
  },
  { $id: 'BudgetIncident', title: 'BudgetIncident' },
)
export const BudgetOverviewSchema = Type.Object(
  {
    squadId: Uuid,
    period: Type.String(),
    periodStart: Timestamp,
    periodEnd: Timestamp,
    squad: SquadBudgetSchema,
    agents: Type.Array(AgentBudgetSchema),
    projects: Type.Array(ProjectBudgetSchema),
    incidents: Type.Array(IncidentSchema),
  },
  { $id: 'BudgetOverview', title: 'BudgetOverview' },
)
export const QuotaWindowSchema = Type.Object(
  {
    scopeType: Type.String(),
    scopeId: Uuid,
    scopeName: Type.String(),
    metric: Type.String(),
    window: Type.String(),
    startsAt: Nullable(Timestamp),
    resetsAt: Nullable(Timestamp),
    limit: Type.Integer(),
    used: Type.Integer(),
    remaining: Type.Integer(),
    percentUsed: Type.Number(),
    status: Type.String(),
    hardStop: Type.Boolean(),
  },
  { $id: 'QuotaWindow', title: 'QuotaWindow' },
)

export const presentCostEvent = (e: CostEvent): Static<typeof CostEventSchema> => ({ ...e, occurredAt: iso(e.occurredAt), createdAt: iso(e.createdAt) })
export const presentCostSummary = (s: CostSummary) => ({ ...s, periodStart: iso(s.periodStart), periodEnd: iso(s.periodEnd) })
export const presentSpendWindow = (w: SpendWindow) => ({ ...w, startsAt: iso(w.startsAt), endsAt: iso(w.endsAt) })
const presentIncident = (i: BudgetIncident): Static<typeof IncidentSchema> => ({
  id: i.id,
  scopeType: i.scopeType,
  scopeId: i.scopeId,
  metric: i.metric,
  level: i.level,
  period: i.period,
  limitAmount: i.limitAmount,
  observedAmount: i.observedAmount,
  createdAt: iso(i.createdAt),
})
const presentProjectBudget = (p: ProjectBudgetView) => ({ ...p, pausedAt: isoOrNull(p.pausedAt) })
export const presentOverview = (o: BudgetOverview) => ({
  ...o,
  periodStart: iso(o.periodStart),
  periodEnd: iso(o.periodEnd),
  projects: o.projects.map(presentProjectBudget),
  incidents: o.incidents.map(presentIncident),
})
export const presentQuotaWindow = (w: QuotaWindow) => ({ ...w, startsAt: isoOrNull(w.startsAt), resetsAt: isoOrNull(w.resetsAt) })
