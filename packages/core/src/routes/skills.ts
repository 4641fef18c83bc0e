import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Ok, SquadParams, errors } from '../schemas/common.js'
import { CreateSkillBody, ImportSkillBody, SkillIdParams, SkillSchema, SkillSummarySchema, UpdateSkillBody, presentSkill, presentSkillSummary } from '../schemas/skills.js'

const SkillSummaryList = Type.Object({ skills: Type.Array(SkillSummarySchema) })

/** Squad skills (docs/skills.md). Writes answer 409 `skills_managed_by_tower` while the tower manages skills. */
export const skillRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { skills } = app.slaw.services
  const tags = ['skills']
  const one = Type.Object({ skill: SkillSchema })

  const listSkills = { tags, params: SquadParams, response: { 200: SkillSummaryList, ...errors } } as const
  app.get('/api/squads/:squadId/skills', { schema: listSkills }, async (req) => ({
    skills: (await skills.list(req.actor, req.params.squadId)).map(presentSkillSummary),
  }))

  const createSkill = { tags, params: SquadParams, body: CreateSkillBody, response: { 201: one, ...errors } } as const
  app.post('/api/squads/:squadId/skills', { schema: createSkill }, async (req, reply) => {
    const skill = await skills.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ skill: presentSkill(skill) })
  })

  const importSkill = { tags, params: SquadParams, body: ImportSkillBody, response: { 201: one, ...errors } } as const
  app.post('/api/squads/:squadId/skills/import', { schema: importSkill }, async (req, reply) => {
    const skill = await skills.import(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ skill: presentSkill(skill) })
  })

  const getSkill = { tags, params: SkillIdParams, response: { 200: one, ...errors } } as const
  app.get('/api/skills/:id', { schema: getSkill }, async (req) => ({
    skill: presentSkill(await skills.get(req.actor, req.params.id)),
  }))

  const updateSkill = { tags, params: SkillIdParams, body: UpdateSkillBody, response: { 200: one, ...errors } } as const
  app.patch('/api/skills/:id', { schema: updateSkill }, async (req) => ({
    skill: presentSkill(await skills.update(req.actor, req.params.id, req.body)),
  }))

  const deleteSkill = { tags, params: SkillIdParams, response: { 200: Ok, ...errors } } as const
  app.delete('/api/skills/:id', { schema: deleteSkill }, async (req) => {
    await skills.delete(req.actor, req.params.id)
    return { ok: true as const }
  })
}
