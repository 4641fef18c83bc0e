import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { SquadParams, errors } from '../schemas/common.js'
import {
  ExportJobSchema, ExportPreview, ExportPreviewBody, ExportStarted, ImportBody, ImportPlanSchema, SquadBundle, StartExportBody, exportParts,
  presentExportJob,
} from '../schemas/exports.js'

const JobParams = Type.Object({ jobId: Type.String({ maxLength: 200 }) })

export const exportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { exports, imports } = app.slaw.services
  const tags = ['exports']

  app.post(
    '/api/squads/:squadId/exports/preview',
    {
      schema: { tags, params: SquadParams, body: ExportPreviewBody, response: { 200: Type.Object({ preview: ExportPreview }), ...errors } },
      // The body is optional: an empty POST previews every part.
      preValidation: async (req) => {
        if (req.body === undefined || req.body === null) req.body = {}
      },
    },
    async (req) => ({ preview: await exports.preview(req.actor, req.params.squadId, req.body.include ?? exportParts) }),
  )

  app.post('/api/squads/:squadId/exports', { schema: { tags, params: SquadParams, body: StartExportBody, response: { 202: ExportStarted, ...errors } } }, async (req, reply) => {
    const job = await exports.start(req.actor, req.params.squadId, req.body.include)
    return reply.status(202).send({ jobId: job.id, status: 'queued' as const })
  })

  app.get('/api/exports/:jobId', { schema: { tags, params: JobParams, response: { 200: Type.Object({ job: ExportJobSchema }), ...errors } } }, async (req) => ({
    job: presentExportJob(await exports.job(req.actor, req.params.jobId)),
  }))

  app.get('/api/exports/:jobId/download', { schema: { tags, params: JobParams, response: { 200: SquadBundle, ...errors } } }, async (req, reply) => {
    const bundle = await exports.download(req.actor, req.params.jobId)
    // Slugs and job ids are [a-z0-9-] only, so the file name needs no quoting rules.
    void reply.header('content-disposition', `attachment; filename="slaw-${bundle.squad?.slug ?? req.params.jobId}-export.json"`)
    return bundle
  })

  app.post('/api/squads/:squadId/imports/preview', { schema: { tags, params: SquadParams, body: ImportBody, response: { 200: Type.Object({ preview: ImportPlanSchema }), ...errors } } }, async (req) => ({
    preview: await imports.preview(req.actor, req.params.squadId, req.body),
  }))

  app.post('/api/squads/:squadId/imports/apply', { schema: { tags, params: SquadParams, body: ImportBody, response: { 200: Type.Object({ result: ImportPlanSchema }), ...errors } } }, async (req) => ({
    result: await imports.apply(req.actor, req.params.squadId, req.body),
  }))
}
