import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, SquadParams, errors } from '../schemas/common.js'
import {
  CreateRoutineBody, ListQuery, RevisionParams, RoutineListItem, RoutineRevisionSchema, RoutineRunSchema, RoutineWithTriggersSchema, RunRoutineBody, UpdateRoutineBody,
  presentRevision, presentRoutineListItem, presentRoutineWithTriggers, presentRun,
} from '../schemas/routines.js'

/** Routines: recurring issue templates, their revisions and runs (docs/routines.md). */
export const routineRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { routines } = app.slaw.services
  const tags = ['routines']
  const WithRevision = Type.Composite([RoutineWithTriggersSchema, Type.Object({ revision: RoutineRevisionSchema })])
  const OneRun = Type.Object({ run: RoutineRunSchema })

  app.get('/api/squads/:squadId/routines', { schema: { tags, params: SquadParams, querystring: ListQuery, response: { 200: Type.Object({ routines: Type.Array(RoutineListItem) }), ...errors } } }, async (req) => ({
    routines: (await routines.list(req.actor, req.params.squadId, req.query)).map(presentRoutineListItem),
  }))

  app.post('/api/squads/:squadId/routines', { schema: { tags, params: SquadParams, body: CreateRoutineBody, response: { 201: WithRevision, ...errors } } }, async (req, reply) => {
    const created = await routines.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ ...presentRoutineWithTriggers(created), revision: presentRevision(created.revision) })
  })

  app.get('/api/routines/:id', { schema: { tags, params: IdParams, response: { 200: RoutineWithTriggersSchema, ...errors } } }, async (req) => presentRoutineWithTriggers(await routines.get(req.actor, req.params.id)))

  app.patch('/api/routines/:id', { schema: { tags, params: IdParams, body: UpdateRoutineBody, response: { 200: RoutineWithTriggersSchema, ...errors } } }, async (req) =>
    presentRoutineWithTriggers(await routines.update(req.actor, req.params.id, req.body)),
  )

  app.get('/api/routines/:id/revisions', { schema: { tags, params: IdParams, querystring: ListQuery, response: { 200: Type.Object({ revisions: Type.Array(RoutineRevisionSchema) }), ...errors } } }, async (req) => ({
    revisions: (await routines.revisions(req.actor, req.params.id, req.query)).map(presentRevision),
  }))

  app.post('/api/routines/:id/revisions/:revisionId/restore', { schema: { tags, params: RevisionParams, response: { 200: WithRevision, ...errors } } }, async (req) => {
    const restored = await routines.restore(req.actor, req.params.id, req.params.revisionId)
    return { ...presentRoutineWithTriggers(restored), revision: presentRevision(restored.revision) }
  })

  app.get('/api/routines/:id/runs', { schema: { tags, params: IdParams, querystring: ListQuery, response: { 200: Type.Object({ runs: Type.Array(RoutineRunSchema) }), ...errors } } }, async (req) => ({
    runs: (await routines.runs(req.actor, req.params.id, req.query)).map(presentRun),
  }))

  // 201 with the new run; 200 with the stored run when the idempotencyKey was seen before.
  app.post('/api/routines/:id/run', { schema: { tags, params: IdParams, body: Type.Optional(RunRoutineBody), response: { 200: OneRun, 201: OneRun, ...errors } } }, async (req, reply) => {
    const { run, created } = await routines.run(req.actor, req.params.id, req.body ?? {})
    return reply.status(created ? 201 : 200).send({ run: presentRun(run) })
  })
}
