import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, errors } from '../schemas/common.js'
import { CreateGoalBody, GoalListItem, GoalSchema, PageQuery, UpdateGoalBody, presentGoal } from '../schemas/goals.js'

export const goalRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { goals } = app.slaw.services
  const tags = ['goals']
  const One = Type.Object({ goal: GoalSchema })

  app.get('/api/squads/:squadId/goals', { schema: { tags, params: SquadParams, querystring: PageQuery, response: { 200: Type.Object({ goals: Type.Array(GoalListItem) }), ...errors } } }, async (req) => ({
    goals: (await goals.list(req.actor, req.params.squadId, req.query)).map((g) => ({ id: g.id, title: g.title, status: g.status, dueDate: g.dueDate })),
  }))

  app.post('/api/squads/:squadId/goals', { schema: { tags, params: SquadParams, body: CreateGoalBody, response: { 201: One, ...errors } } }, async (req, reply) => {
    const goal = await goals.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ goal: presentGoal(goal) })
  })

  app.get('/api/goals/:id', { schema: { tags, params: IdParams, response: { 200: One, ...errors } } }, async (req) => ({ goal: presentGoal(await goals.get(req.actor, req.params.id)) }))

  app.patch('/api/goals/:id', { schema: { tags, params: IdParams, body: UpdateGoalBody, response: { 200: One, ...errors } } }, async (req) => ({
    goal: presentGoal(await goals.update(req.actor, req.params.id, req.body)),
  }))

  app.delete('/api/goals/:id', { schema: { tags, params: IdParams, response: { 200: Ok, ...errors } } }, async (req) => {
    await goals.delete(req.actor, req.params.id)
    return { ok: true as const }
  })
}
