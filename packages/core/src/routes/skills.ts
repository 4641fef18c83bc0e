import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Ok, SquadParams, errors } from '../schemas/common.js'
import {
  CreateSkillBody, ImportSkillBody, SkillIdParams, SkillSchema, SkillSummarySchema, UpdateSkillBody, presentSkill, presentSkillSummary,
} from '../schemas/skills.js'

/** Squad skills (docs/skills.md). Writes answer 409 `skills_managed_by_tower` while the tower manages skills. */
export const skillRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { skills } = app.slaw.services
  const tags = ['skills']
  const one = Type.Object({ skill: SkillSchema })

  app.get('/api/squads/:squadId/skills', { schema: { tags, params: SquadParams, response: { 200: Type.Object({ skills: Type.Array(SkillSummarySchema) }), ...errors } } }, async (req) => ({
    skills: (await skills.list(req.actor, req.params.squadId)).map(presentSkillSummary),
  }))

  app.post('/api/squads/:squadId/skills', { schema: { tags, params: SquadParams, body: CreateSkillBody, response: { 201: one, ...errors } } }, async (req, reply) => {
    const skill = await skills.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ skill: presentSkill(skill) })
  })

  app.post('/api/squads/:squadId/skills/import', { schema: { tags, params: SquadParams, body: ImportSkillBody, response: { 201: one, ...errors } } }, async (req, reply) => {
    const skill = await skills.import(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ skill: presentSkill(skill) })
  })

  app.get('/api/skills/:id', { schema: { tags, params: SkillIdParams, response: { 200: one, ...errors } } }, async (req) => ({
    skill: presentSkill(await skills.get(req.actor, req.params.id)),
  }))

  app.patch('/api/skills/:id', { schema: { tags, params: SkillIdParams, body: UpdateSkillBody, response: { 200: one, ...errors } } }, async (req) => ({
    skill: presentSkill(await skills.update(req.actor, req.params.id, req.body)),
  }))

  app.delete('/api/skills/:id', { schema: { tags, params: SkillIdParams, response: { 200: Ok, ...errors } } }, async (req) => {
    await skills.delete(req.actor, req.params.id)
    return { ok: true as const }
  })
}
