import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, Ok, SquadParams, errors } from '../schemas/common.js'
import { PageQuery } from '../schemas/goals.js'
import {
  CreateProjectBody, CreateWorkspaceBody, ProjectListItem, ProjectSchema, UpdateProjectBody, WorkspaceSchema, presentProject, presentProjectListItem, presentWorkspace,
} from '../schemas/projects.js'

export const projectRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { projects } = app.slaw.services
  const tags = ['projects']
  const One = Type.Object({ project: ProjectSchema })

  app.get('/api/squads/:squadId/projects', { schema: { tags, params: SquadParams, querystring: PageQuery, response: { 200: Type.Object({ projects: Type.Array(ProjectListItem) }), ...errors } } }, async (req) => ({
    projects: (await projects.list(req.actor, req.params.squadId, req.query)).map(presentProjectListItem),
  }))

  app.post('/api/squads/:squadId/projects', { schema: { tags, params: SquadParams, body: CreateProjectBody, response: { 201: One, ...errors } } }, async (req, reply) => {
    const project = await projects.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ project: presentProject(project) })
  })

  app.get('/api/projects/:id', { schema: { tags, params: IdParams, response: { 200: One, ...errors } } }, async (req) => ({ project: presentProject(await projects.get(req.actor, req.params.id)) }))

  app.patch('/api/projects/:id', { schema: { tags, params: IdParams, body: UpdateProjectBody, response: { 200: One, ...errors } } }, async (req) => ({
    project: presentProject(await projects.update(req.actor, req.params.id, req.body)),
  }))

  app.delete('/api/projects/:id', { schema: { tags, params: IdParams, response: { 200: Ok, ...errors } } }, async (req) => {
    await projects.delete(req.actor, req.params.id)
    return { ok: true as const }
  })

  app.get('/api/projects/:id/workspaces', { schema: { tags, params: IdParams, response: { 200: Type.Object({ workspaces: Type.Array(WorkspaceSchema) }), ...errors } } }, async (req) => ({
    workspaces: (await projects.workspaces(req.actor, req.params.id)).map(presentWorkspace),
  }))

  app.post('/api/projects/:id/workspaces', { schema: { tags, params: IdParams, body: CreateWorkspaceBody, response: { 201: Type.Object({ workspace: WorkspaceSchema }), ...errors } } }, async (req, reply) => {
    const workspace = await projects.createWorkspace(req.actor, req.params.id, req.body)
    return reply.status(201).send({ workspace: presentWorkspace(workspace) })
  })
}
