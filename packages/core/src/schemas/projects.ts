import { Type } from '@sinclair/typebox'
import type { Workspace } from '../contracts/governance.js'
import type { Project } from '../records.js'
import { Nullable, Timestamp, Uuid, iso, isoOrNull } from './common.js'

export const PauseReason = Nullable(Type.Union([Type.Literal('budget'), Type.Literal('manual')]))
const ProjectStatus = Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z][a-z0-9_]*$' })
const BudgetCents = Nullable(Type.Integer({ minimum: 0, maximum: 1_000_000_000_000 }))

export const ProjectSchema = Type.Object(
  {
    id: Uuid,
    squadId: Uuid,
    name: Type.String(),
    description: Nullable(Type.String()),
    status: Type.String(),
    goalId: Nullable(Uuid),
    budgetCents: Nullable(Type.Integer()),
    pausedAt: Nullable(Timestamp),
    pauseReason: PauseReason,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Project', title: 'Project' },
)

export const ProjectListItem = Type.Object({
  id: Uuid,
  name: Type.String(),
  status: Type.String(),
  pausedAt: Nullable(Timestamp),
  pauseReason: PauseReason,
  goalId: Nullable(Uuid),
  budgetCents: Nullable(Type.Integer()),
})

export const CreateProjectBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Nullable(Type.String({ maxLength: 100_000 }))),
    status: Type.Optional(ProjectStatus),
    goalId: Type.Optional(Nullable(Uuid)),
    budgetCents: Type.Optional(BudgetCents),
  },
  { additionalProperties: false },
)

export const UpdateProjectBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    description: Type.Optional(Nullable(Type.String({ maxLength: 100_000 }))),
    status: Type.Optional(ProjectStatus),
    goalId: Type.Optional(Nullable(Uuid)),
    budgetCents: Type.Optional(BudgetCents),
    pauseReason: Type.Optional(PauseReason),
  },
  { additionalProperties: false },
)

export const WorkspaceSchema = Type.Object(
  {
    id: Uuid,
    projectId: Uuid,
    squadId: Uuid,
    name: Type.String(),
    cwd: Nullable(Type.String()),
    repoUrl: Nullable(Type.String()),
    repoRef: Nullable(Type.String()),
    issueId: Nullable(Uuid),
    status: Type.String(),
    metadata: Type.Record(Type.String(), Type.Unknown()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Workspace', title: 'Workspace' },
)

export const CreateWorkspaceBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    cwd: Type.Optional(Nullable(Type.String({ maxLength: 4_000 }))),
    repoUrl: Type.Optional(Nullable(Type.String({ maxLength: 2_000 }))),
    repoRef: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
    issueId: Type.Optional(Nullable(Uuid)),
    metadata: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { maxProperties: 100 })),
  },
  { additionalProperties: false },
)

export const presentProject = (p: Project) => ({ ...p, pausedAt: isoOrNull(p.pausedAt), createdAt: iso(p.createdAt), updatedAt: iso(p.updatedAt) })
export const presentProjectListItem = (p: Project) => ({
  id: p.id,
  name: p.name,
  status: p.status,
  pausedAt: isoOrNull(p.pausedAt),
  pauseReason: p.pauseReason,
  goalId: p.goalId,
  budgetCents: p.budgetCents,
})
export const presentWorkspace = (w: Workspace) => ({ ...w, createdAt: iso(w.createdAt), updatedAt: iso(w.updatedAt) })
