import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors } from '../schemas/common.js'
import { presentSkill } from '../schemas/skills.js'
import { ConnectTowerBody, InstallSkillBody, InstalledSkill, SkillKeyParams, TowerStatusSchema, presentTowerStatus } from '../schemas/tower.js'

/**
 * The Operator's tower controls. Ungated: in enforce mode they stay reachable while the instance
 * waits for its enrollment, so an Operator can see why and act on it.
 */
export const towerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { tower } = app.slaw.services
  const tags = ['tower']
  const config = { ungated: true }
  const statusResponse = { 200: Type.Object({ tower: TowerStatusSchema }), ...errors }

  // The routes without a body that answer the tower's status.
  const towerStatus = { tags, response: statusResponse } as const
  app.get('/api/tower', { config, schema: towerStatus }, async (req) => ({
    tower: presentTowerStatus(await tower.status(req.actor)),
  }))

  const connectTower = { tags, body: ConnectTowerBody, response: statusResponse } as const
  app.post('/api/tower/connect', { config, schema: connectTower }, async (req) => ({
    tower: presentTowerStatus(await tower.connect(req.actor, req.body)),
  }))

  app.post('/api/tower/disconnect', { config, schema: towerStatus }, async (req) => ({
    tower: presentTowerStatus(await tower.disconnect(req.actor)),
  }))

  app.post('/api/tower/re-enroll', { config, schema: towerStatus }, async (req) => ({
    tower: presentTowerStatus(await tower.reEnroll(req.actor)),
  }))

  app.post('/api/tower/sync', { config, schema: towerStatus }, async (req) => ({
    tower: presentTowerStatus(await tower.syncNow(req.actor)),
  }))

  const installSkill = { tags, params: SkillKeyParams, body: InstallSkillBody, response: { 200: InstalledSkill, ...errors } } as const
  app.post('/api/tower/skills/:key/install', { config, schema: installSkill }, async (req) => ({ skill: presentSkill(await tower.installSkill(req.actor, req.params.key, req.body.squadId)) }))
}
