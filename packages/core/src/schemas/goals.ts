import { Type, type Static } from '@sinclair/typebox'
import { GoalRecord, type Goal } from '../records.js'
import { Nullable, iso } from './common.js'

const GoalStatus = GoalRecord.properties.status

export const GoalSchema = Type.Object(GoalRecord.properties, { $id: 'Goal', title: 'Goal' })

export const GoalListItem = Type.Object(Type.Pick(GoalRecord, ['id', 'title', 'status', 'dueDate']).properties, { $id: 'GoalSummary', title: 'GoalSummary' })

const goalFields = {
  description: Type.Optional(Nullable(Type.String({ maxLength: 100_000 }))),
  status: Type.Optional(GoalStatus),
  dueDate: Type.Optional(GoalRecord.properties.dueDate),
}
export const CreateGoalBody = Type.Object({ title: Type.String({ minLength: 1, maxLength: 500 }), ...goalFields }, { additionalProperties: false })
export const UpdateGoalBody = Type.Object({ title: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })), ...goalFields }, { additionalProperties: false })

export const PageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 500 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
})

export const presentGoal = (g: Goal): Static<typeof GoalSchema> => ({ ...g, createdAt: iso(g.createdAt), updatedAt: iso(g.updatedAt) })
