import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, SquadParams, errors } from '../schemas/common.js'
import {
  CreateRoutineBody,
  ListQuery,
  RevisionParams,
  RoutineListItem,
  RoutineRevisionSchema,
  RoutineRunSchema,
  RoutineWithTriggersSchema,
  RunRoutineBody,
  UpdateRoutineBody,
  presentRevision,
  presentRoutineListItem,
  presentRoutineWithTriggers,
  presentRun,
} from '../schemas/routines.js'

const RoutineList = Type.Object({ routines: Type.Array(RoutineListItem) })
const RevisionList = Type.Object({ revisions: Type.Array(RoutineRevisionSchema) })
const RoutineRunList = Type.Object({ runs: Type.Array(RoutineRunSchema) })

/** Routines: recurring issue templates, their revisions and runs (docs/routines.md). */
export const routineRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { routines } = app.slaw.services
  const tags = ['routines']
  const WithRevision = Type.Composite([RoutineWithTriggersSchema, Type.Object({ revision: RoutineRevisionSchema })])
  const OneRun = Type.Object({ run: RoutineRunSchema })

  const listRoutines = { tags, params: SquadParams, querystring: ListQuery, response: { 200: RoutineList, ...errors } } as const
  app.get('/api/squads/:squadId/routines', { schema: listRoutines }, async (req) => ({
    routines: (await routines.list(req.actor, req.params.squadId, req.query)).map(presentRoutineListItem),
  }))

  const createRoutine = { tags, params: SquadParams, body: CreateRoutineBody, response: { 201: WithRevision, ...errors } } as const
  app.post('/api/squads/:squadId/routines', { schema: createRoutine }, async (req, reply) => {
    const created = await routines.create(req.actor, req.params.squadId, req.body)
    return reply.status(201).send({ ...presentRoutineWithTriggers(created), revision: presentRevision(created.revision) })
  })

  const getRoutine = { tags, params: IdParams, response: { 200: RoutineWithTriggersSchema, ...errors } } as const
  app.get('/api/routines/:id', { schema: getRoutine }, async (req) => presentRoutineWithTriggers(await routines.get(req.actor, req.params.id)))

  const updateRoutine = {
    tags,
    params: IdParams,
    body: UpdateRoutineBody,
    response: { 200: RoutineWithTriggersSchema, ...errors },
  } as const
  app.patch('/api/routines/:id', { schema: updateRoutine }, async (req) => presentRoutineWithTriggers(await routines.update(req.actor, req.params.id, req.body)))

  const listRevisions = { tags, params: IdParams, querystring: ListQuery, response: { 200: RevisionList, ...errors } } as const
  app.get('/api/routines/:id/revisions', { schema: listRevisions }, async (req) => ({
    revisions: (await routines.revisions(req.actor, req.params.id, req.query)).map(presentRevision),
  }))

  const restoreRevision = { tags, params: RevisionParams, response: { 200: WithRevision, ...errors } } as const
  app.post('/api/routines/:id/revisions/:revisionId/restore', { schema: restoreRevision }, async (req) => {
    const restored = await routines.restore(req.actor, req.params.id, req.params.revisionId)
    return { ...presentRoutineWithTriggers(restored), revision: presentRevision(restored.revision) }
  })

  const listRuns = { tags, params: IdParams, querystring: ListQuery, response: { 200: RoutineRunList, ...errors } } as const
  app.get('/api/routines/:id/runs', { schema: listRuns }, async (req) => ({
    runs: (await routines.runs(req.actor, req.params.id, req.query)).map(presentRun),
  }))

  // 201 with the new run; 200 with the stored run when the idempotencyKey was seen before.
  const runRoutine = {
    tags,
    params: IdParams,
    body: Type.Optional(RunRoutineBody),
    response: { 200: OneRun, 201: OneRun, ...errors },
  } as const
  app.post('/api/routines/:id/run', { schema: runRoutine }, async (req, reply) => {
    const { run, created } = await routines.run(req.actor, req.params.id, req.body ?? {})
    return reply.status(created ? 201 : 200).send({ run: presentRun(run) })
  })
}
