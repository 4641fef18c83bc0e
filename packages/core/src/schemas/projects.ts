import { Type, type Static } from '@sinclair/typebox'
import { WorkspaceRecord, type Workspace } from '../contracts/governance.js'
import { ProjectRecord, type Project } from '../records.js'
import { Nullable, Uuid, iso, isoOrNull } from './common.js'

const PauseReason = ProjectRecord.properties.pauseReason
const ProjectStatus = Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z][a-z0-9_]*$' })
const BudgetCents = Nullable(Type.Integer({ minimum: 0, maximum: 1_000_000_000_000 }))

export const ProjectSchema = Type.Object(ProjectRecord.properties, { $id: 'Project', title: 'Project' })

export const ProjectListItem = Type.Object(Type.Pick(ProjectRecord, ['id', 'name', 'status', 'pausedAt', 'pauseReason', 'goalId', 'budgetCents']).properties, {
  $id: 'ProjectSummary',
  title: 'ProjectSummary',
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

// The status is documented as a plain string, as it always was.
export const WorkspaceSchema = Type.Object({ ...WorkspaceRecord.properties, status: Type.String() }, { $id: 'Workspace', title: 'Workspace' })

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

export const presentProject = (p: Project): Static<typeof ProjectSchema> => ({ ...p, pausedAt: isoOrNull(p.pausedAt), createdAt: iso(p.createdAt), updatedAt: iso(p.updatedAt) })
export const presentProjectListItem = (p: Project): Static<typeof ProjectListItem> => ({
  id: p.id,
  name: p.name,
  status: p.status,
  pausedAt: isoOrNull(p.pausedAt),
  pauseReason: p.pauseReason,
  goalId: p.goalId,
  budgetCents: p.budgetCents,
})
export const presentWorkspace = (w: Workspace): Static<typeof WorkspaceSchema> => ({ ...w, createdAt: iso(w.createdAt), updatedAt: iso(w.updatedAt) })
