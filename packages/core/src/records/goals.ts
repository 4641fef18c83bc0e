import { Type, type StaticDecode } from '@sinclair/typebox'
import { DateTime, Nullable, OneOf, Uuid } from './fields.js'

export const goalStatuses = ['draft', 'in_progress', 'done'] as const
export type GoalStatus = (typeof goalStatuses)[number]

export const GoalRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  title: Type.String(),
  description: Nullable(Type.String()),
  status: OneOf(goalStatuses),
  /** A calendar date, `YYYY-MM-DD`. */
  dueDate: Nullable(Type.String({ format: 'date' })),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type Goal = StaticDecode<typeof GoalRecord>

export const ProjectRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  name: Type.String(),
  description: Nullable(Type.String()),
  status: Type.String(),
  goalId: Nullable(Uuid),
  budgetCents: Nullable(Type.Integer()),
  pausedAt: Nullable(DateTime),
  pauseReason: Nullable(OneOf(['budget', 'manual'])),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type Project = StaticDecode<typeof ProjectRecord>
