import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, errors } from '../schemas/common.js'
import { PageQuery } from '../schemas/goals.js'
import {
  CreateProjectBody,
  CreateWorkspaceBody,
  ProjectListItem,
  ProjectSchema,
  UpdateProjectBody,
  WorkspaceSchema,
  presentProject,
  presentProjectListItem,
  presentWorkspace,
} from '../schemas/projects.js'

const ProjectList = Type.Object({ projects: Type.Array(ProjectListItem) })
const WorkspaceList = Type.Object({ workspaces: Type.Array(WorkspaceSchema) })
const WorkspaceBody = Type.Object({ workspace: WorkspaceSchema })

export const projectRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { projects } = app.slaw.services
  const tags = ['projects']
  const One = Type.Object({ project: ProjectSchema })

  const listProjects = { tags, params: SquadParams, querystring: PageQuery, response: { 200: ProjectList, ...errors } } as const
  app.get('/api/squads/:squadId/projects', { schema: listProjects }, async (req) => ({
    projects: (await projects.list(req.actor, req.params.squadId, req.query)).map(presentProjectListItem),
  }))

  const createProject = { tags, params: SquadParams, body: CreateProjectBody, response: { 201: One, ...errors } } as const
  app.post('/api/squads/:squadId/projects', { schema: createProject }, async (req, reply) => {
    const project = await projects.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ project: presentProject(project) })
  })

  const getProject = { tags, params: IdParams, response: { 200: One, ...errors } } as const
  app.get('/api/projects/:id', { schema: getProject }, async (req) => ({
    project: presentProject(await projects.get(req.actor, req.params.id)),
  }))

  const updateProject = { tags, params: IdParams, body: UpdateProjectBody, response: { 200: One, ...errors } } as const
  app.patch('/api/projects/:id', { schema: updateProject }, async (req) => ({
    project: presentProject(await projects.update(req.actor, req.params.id, req.body)),
  }))

  const deleteProject = { tags, params: IdParams, response: { 200: Ok, ...errors } } as const
  app.delete('/api/projects/:id', { schema: deleteProject }, async (req) => {
    await projects.delete(req.actor, req.params.id)
    return { ok: true as const }
  })

  const listWorkspaces = { tags, params: IdParams, response: { 200: WorkspaceList, ...errors } } as const
  app.get('/api/projects/:id/workspaces', { schema: listWorkspaces }, async (req) => ({
    workspaces: (await projects.workspaces(req.actor, req.params.id)).map(presentWorkspace),
  }))

  const createWorkspace = { tags, params: IdParams, body: CreateWorkspaceBody, response: { 201: WorkspaceBody, ...errors } } as const
  app.post('/api/projects/:id/workspaces', { schema: createWorkspace }, async (req, reply) => {
    const workspace = await projects.createWorkspace(req.actor, req.params.id, req.body)
    return reply.status(201).send({ workspace: presentWorkspace(workspace) })
  })
}
