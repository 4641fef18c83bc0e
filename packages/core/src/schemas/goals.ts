import { Type } from '@sinclair/typebox'
import type { Goal } from '../records.js'
import { Nullable, Timestamp, Uuid, iso } from './common.js'

export const GoalStatus = Type.Union([Type.Literal('draft'), Type.Literal('in_progress'), Type.Literal('done')])
const DueDate = Type.String({ format: 'date' })

export const GoalSchema = Type.Object(
  {
    id: Uuid,
    squadId: Uuid,
    title: Type.String(),
    description: Nullable(Type.String()),
    status: GoalStatus,
    dueDate: Nullable(DueDate),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Goal', title: 'Goal' },
)

export const GoalListItem = Type.Object({ id: Uuid, title: Type.String(), status: GoalStatus, dueDate: Nullable(DueDate) })

const goalFields = {
  description: Type.Optional(Nullable(Type.String({ maxLength: 100_000 }))),
  status: Type.Optional(GoalStatus),
  dueDate: Type.Optional(Nullable(DueDate)),
}
export const CreateGoalBody = Type.Object({ title: Type.String({ minLength: 1, maxLength: 500 }), ...goalFields }, { additionalProperties: false })
export const UpdateGoalBody = Type.Object({ title: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })), ...goalFields }, { additionalProperties: false })

export const PageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 500 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
})

export const presentGoal = (g: Goal) => ({ ...g, createdAt: iso(g.createdAt), updatedAt: iso(g.updatedAt) })
