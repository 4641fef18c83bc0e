import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, SquadParams, errors } from '../schemas/common.js'
import {
  AgentBudgetBody, AgentBudgetSchema, AgentCostRow, BudgetOverviewSchema, CostEventSchema, CostSummarySchema, IssueCostSummary, ProviderCostRow,
  QuotaWindowSchema, RecordCostBody, SpendWindowSchema, SquadBudgetBody, SquadBudgetSchema, presentCostEvent, presentCostSummary, presentOverview,
  presentQuotaWindow, presentSpendWindow,
} from '../schemas/costs.js'

export const costRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { costs, budgets } = app.slaw.services
  const tags = ['costs']

  app.post('/api/squads/:squadId/cost-events', { schema: { tags, params: SquadParams, body: RecordCostBody, response: { 201: Type.Object({ costEvent: CostEventSchema }), ...errors } } }, async (req, reply) => {
    const event = await costs.report(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ costEvent: presentCostEvent(event) })
  })

  app.get('/api/squads/:squadId/costs/summary', { schema: { tags, params: SquadParams, response: { 200: Type.Object({ summary: CostSummarySchema }), ...errors } } }, async (req) => ({
    summary: presentCostSummary(await costs.summary(req.actor, req.params.squadId)),
  }))

  app.get('/api/squads/:squadId/costs/by-agent', { schema: { tags, params: SquadParams, response: { 200: Type.Object({ month: Type.String(), agents: Type.Array(AgentCostRow) }), ...errors } } }, async (req) =>
    costs.byAgent(req.actor, req.params.squadId),
  )

  app.get('/api/squads/:squadId/costs/by-provider', { schema: { tags, params: SquadParams, response: { 200: Type.Object({ month: Type.String(), providers: Type.Array(ProviderCostRow) }), ...errors } } }, async (req) =>
    costs.byProvider(req.actor, req.params.squadId),
  )

  app.get('/api/squads/:squadId/costs/window-spend', { schema: { tags, params: SquadParams, response: { 200: Type.Object({ windows: Type.Array(SpendWindowSchema) }), ...errors } } }, async (req) => ({
    windows: (await costs.windowSpend(req.actor, req.params.squadId)).windows.map(presentSpendWindow),
  }))

  app.get('/api/squads/:squadId/costs/quota-windows', { schema: { tags, params: SquadParams, response: { 200: Type.Object({ period: Type.String(), windows: Type.Array(QuotaWindowSchema) }), ...errors } } }, async (req) => {
    const q = await budgets.quotaWindows(req.actor, req.params.squadId)
    return { period: q.period, windows: q.windows.map(presentQuotaWindow) }
  })

  app.get('/api/issues/:id/cost-summary', { schema: { tags: [...tags, 'issues'], params: IdParams, response: { 200: Type.Object({ summary: IssueCostSummary }), ...errors } } }, async (req) => {
    const s = await costs.issueSummary(req.actor, req.params.id)
    return { summary: { ...s, totalCents: s.costCents, period: 'all' as const } }
  })

  app.get('/api/squads/:squadId/budgets/overview', { schema: { tags: ['budgets'], params: SquadParams, response: { 200: BudgetOverviewSchema, ...errors } } }, async (req) =>
    presentOverview(await budgets.overview(req.actor, req.params.squadId)),
  )

  app.patch('/api/squads/:squadId/budgets', { schema: { tags: ['budgets'], params: SquadParams, body: SquadBudgetBody, response: { 200: Type.Object({ budget: SquadBudgetSchema }), ...errors } } }, async (req) => ({
    budget: await budgets.setSquadBudget(req.actor, req.params.squadId, req.body),
  }))

  app.patch('/api/agents/:id/budgets', { schema: { tags: ['budgets'], params: IdParams, body: AgentBudgetBody, response: { 200: Type.Object({ budget: AgentBudgetSchema }), ...errors } } }, async (req) => ({
    budget: await budgets.setAgentBudget(req.actor, req.params.id, req.body),
  }))
}
