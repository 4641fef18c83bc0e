import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, errors } from '../schemas/common.js'
import { CreateGoalBody, GoalListItem, GoalSchema, PageQuery, UpdateGoalBody, presentGoal } from '../schemas/goals.js'

const GoalList = Type.Object({ goals: Type.Array(GoalListItem) })

export const goalRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { goals } = app.slaw.services
  const tags = ['goals']
  const One = Type.Object({ goal: GoalSchema })

  const listGoals = { tags, params: SquadParams, querystring: PageQuery, response: { 200: GoalList, ...errors } } as const
  app.get('/api/squads/:squadId/goals', { schema: listGoals }, async (req) => ({
    goals: (await goals.list(req.actor, req.params.squadId, req.query)).map((g) => ({
      id: g.id,
      title: g.title,
      status: g.status,
      dueDate: g.dueDate,
    })),
  }))

  const createGoal = { tags, params: SquadParams, body: CreateGoalBody, response: { 201: One, ...errors } } as const
  app.post('/api/squads/:squadId/goals', { schema: createGoal }, async (req, reply) => {
    const goal = await goals.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ goal: presentGoal(goal) })
  })

  const getGoal = { tags, params: IdParams, response: { 200: One, ...errors } } as const
  app.get('/api/goals/:id', { schema: getGoal }, async (req) => ({ goal: presentGoal(await goals.get(req.actor, req.params.id)) }))

  const updateGoal = { tags, params: IdParams, body: UpdateGoalBody, response: { 200: One, ...errors } } as const
  app.patch('/api/goals/:id', { schema: updateGoal }, async (req) => ({
    goal: presentGoal(await goals.update(req.actor, req.params.id, req.body)),
  }))

  const deleteGoal = { tags, params: IdParams, response: { 200: Ok, ...errors } } as const
  app.delete('/api/goals/:id', { schema: deleteGoal }, async (req) => {
    await goals.delete(req.actor, req.params.id)
    return { ok: true as const }
  })
}
