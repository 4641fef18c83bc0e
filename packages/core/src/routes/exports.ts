import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { SquadParams, errors } from '../schemas/common.js'
import { ExportJobSchema, ExportPreview, ExportPreviewBody, ExportStarted, ImportBody, ImportPlanSchema, SquadBundle, StartExportBody, exportParts, presentExportJob } from '../schemas/exports.js'

const JobParams = Type.Object({ jobId: Type.String({ maxLength: 200 }) })
const ExportPreviewResponse = Type.Object({ preview: ExportPreview })
const ExportJobBody = Type.Object({ job: ExportJobSchema })
const ImportPreviewResponse = Type.Object({ preview: ImportPlanSchema })
const ImportResultResponse = Type.Object({ result: ImportPlanSchema })

export const exportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { exports, imports } = app.slaw.services
  const tags = ['exports']

  const previewExport = { tags, params: SquadParams, body: ExportPreviewBody, response: { 200: ExportPreviewResponse, ...errors } } as const
  app.post(
    '/api/squads/:squadId/exports/preview',
    {
      schema: previewExport,
      // The body is optional: an empty POST previews every part.
      preValidation: async (req) => {
        if (req.body === undefined || req.body === null) req.body = {}
      },
    },
    async (req) => ({ preview: await exports.preview(req.actor, req.params.squadId, req.body.include ?? exportParts) }),
  )

  const startExport = { tags, params: SquadParams, body: StartExportBody, response: { 202: ExportStarted, ...errors } } as const
  app.post('/api/squads/:squadId/exports', { schema: startExport }, async (req, reply) => {
    const job = await exports.start(req.actor, req.params.squadId, req.body.include)
    return reply.status(202).send({ jobId: job.id, status: 'queued' as const })
  })

  const getExportJob = { tags, params: JobParams, response: { 200: ExportJobBody, ...errors } } as const
  app.get('/api/exports/:jobId', { schema: getExportJob }, async (req) => ({
    job: presentExportJob(await exports.job(req.actor, req.params.jobId)),
  }))

  const downloadExport = { tags, params: JobParams, response: { 200: SquadBundle, ...errors } } as const
  app.get('/api/exports/:jobId/download', { schema: downloadExport }, async (req, reply) => {
    const bundle = await exports.download(req.actor, req.params.jobId)
    // Slugs and job ids are [a-z0-9-] only, so the file name needs no quoting rules.
    void reply.header('content-disposition', `attachment; filename="slaw-${bundle.squad?.slug ?? req.params.jobId}-export.json"`)
    return bundle
  })

  const previewImport = { tags, params: SquadParams, body: ImportBody, response: { 200: ImportPreviewResponse, ...errors } } as const
  app.post('/api/squads/:squadId/imports/preview', { schema: previewImport }, async (req) => ({
    preview: await imports.preview(req.actor, req.params.squadId, req.body),
  }))

  const applyImport = { tags, params: SquadParams, body: ImportBody, response: { 200: ImportResultResponse, ...errors } } as const
  app.post('/api/squads/:squadId/imports/apply', { schema: applyImport }, async (req) => ({
    result: await imports.apply(req.actor, req.params.squadId, req.body),
  }))
}
