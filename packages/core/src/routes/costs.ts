import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, SquadParams, errors } from '../schemas/common.js'
import {
  AgentBudgetBody,
  AgentBudgetSchema,
  AgentCostRow,
  BudgetOverviewSchema,
  CostEventSchema,
  CostMonthQuery,
  CostSummarySchema,
  DayCosts,
  IssueCostSummary,
  ModelCosts,
  ProviderCostRow,
  QuotaWindowSchema,
  RecordCostBody,
  SpendWindowSchema,
  SquadBudgetBody,
  SquadBudgetSchema,
  presentCostEvent,
  presentCostSummary,
  presentMonth,
  presentOverview,
  presentQuotaWindow,
  presentSpendWindow,
} from '../schemas/costs.js'

const CostEventBody = Type.Object({ costEvent: CostEventSchema })
const CostSummaryBody = Type.Object({ summary: CostSummarySchema })
const AgentCosts = Type.Object({ month: Type.String(), agents: Type.Array(AgentCostRow) })
const ProviderCosts = Type.Object({ month: Type.String(), providers: Type.Array(ProviderCostRow) })
const SpendWindowList = Type.Object({ windows: Type.Array(SpendWindowSchema) })
const QuotaWindowList = Type.Object({ period: Type.String(), windows: Type.Array(QuotaWindowSchema) })
const IssueCostSummaryBody = Type.Object({ summary: IssueCostSummary })
const SquadBudgetResponse = Type.Object({ budget: SquadBudgetSchema })
const AgentBudgetResponse = Type.Object({ budget: AgentBudgetSchema })

export const costRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { costs, budgets } = app.slaw.services
  const tags = ['costs']

  const reportCost = { tags, params: SquadParams, body: RecordCostBody, response: { 201: CostEventBody, ...errors } } as const
  app.post('/api/squads/:squadId/cost-events', { schema: reportCost }, async (req, reply) => {
    const event = await costs.report(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ costEvent: presentCostEvent(event) })
  })

  const costSummary = { tags, params: SquadParams, response: { 200: CostSummaryBody, ...errors } } as const
  app.get('/api/squads/:squadId/costs/summary', { schema: costSummary }, async (req) => ({
    summary: presentCostSummary(await costs.summary(req.actor, req.params.squadId)),
  }))

  const costsByAgent = { tags, params: SquadParams, response: { 200: AgentCosts, ...errors } } as const
  app.get('/api/squads/:squadId/costs/by-agent', { schema: costsByAgent }, async (req) => costs.byAgent(req.actor, req.params.squadId))

  const costsByProvider = { tags, params: SquadParams, response: { 200: ProviderCosts, ...errors } } as const
  app.get('/api/squads/:squadId/costs/by-provider', { schema: costsByProvider }, async (req) => costs.byProvider(req.actor, req.params.squadId))

  const costsByDay = { tags, params: SquadParams, querystring: CostMonthQuery, response: { 200: DayCosts, ...errors } } as const
  app.get('/api/squads/:squadId/costs/by-day', { schema: costsByDay }, async (req) => presentMonth(await costs.byDay(req.actor, req.params.squadId, req.query.month)))

  const costsByModel = { tags, params: SquadParams, querystring: CostMonthQuery, response: { 200: ModelCosts, ...errors } } as const
  app.get('/api/squads/:squadId/costs/by-model', { schema: costsByModel }, async (req) => presentMonth(await costs.byModel(req.actor, req.params.squadId, req.query.month)))

  const windowSpend = { tags, params: SquadParams, response: { 200: SpendWindowList, ...errors } } as const
  app.get('/api/squads/:squadId/costs/window-spend', { schema: windowSpend }, async (req) => ({
    windows: (await costs.windowSpend(req.actor, req.params.squadId)).windows.map(presentSpendWindow),
  }))

  const quotaWindows = { tags, params: SquadParams, response: { 200: QuotaWindowList, ...errors } } as const
  app.get('/api/squads/:squadId/costs/quota-windows', { schema: quotaWindows }, async (req) => {
    const q = await budgets.quotaWindows(req.actor, req.params.squadId)
    return { period: q.period, windows: q.windows.map(presentQuotaWindow) }
  })

  const issueCostSummary = { tags: [...tags, 'issues'], params: IdParams, response: { 200: IssueCostSummaryBody, ...errors } } as const
  app.get('/api/issues/:id/cost-summary', { schema: issueCostSummary }, async (req) => {
    const s = await costs.issueSummary(req.actor, req.params.id)
    return { summary: { ...s, totalCents: s.costCents, period: 'all' as const } }
  })

  const budgetOverview = { tags: ['budgets'], params: SquadParams, response: { 200: BudgetOverviewSchema, ...errors } } as const
  app.get('/api/squads/:squadId/budgets/overview', { schema: budgetOverview }, async (req) => presentOverview(await budgets.overview(req.actor, req.params.squadId)))

  const setSquadBudget = {
    tags: ['budgets'],
    params: SquadParams,
    body: SquadBudgetBody,
    response: { 200: SquadBudgetResponse, ...errors },
  } as const
  app.patch('/api/squads/:squadId/budgets', { schema: setSquadBudget }, async (req) => ({
    budget: await budgets.setSquadBudget(req.actor, req.params.squadId, req.body),
  }))

  const setAgentBudget = {
    tags: ['budgets'],
    params: IdParams,
    body: AgentBudgetBody,
    response: { 200: AgentBudgetResponse, ...errors },
  } as const
  app.patch('/api/agents/:id/budgets', { schema: setAgentBudget }, async (req) => ({
    budget: await budgets.setAgentBudget(req.actor, req.params.id, req.body),
  }))
}
