import { Type, type Static } from '@sinclair/typebox'
import { JobRecord, type Job } from '../records.js'
import { Uuid, iso, isoOrNull } from './common.js'

// The bundle format and the import plan live with the fleet area (services/fleet/bundle.ts).
export { ImportPlanSchema, SquadBundle, exportParts } from '../services/fleet/bundle.js'
export type { ExportPart } from '../services/fleet/bundle.js'
import { collisionPolicies, exportParts, type ExportPart } from '../services/fleet/bundle.js'

const ExportPartSchema = Type.Union(exportParts.map((p) => Type.Literal(p)))
const Include = Type.Array(ExportPartSchema, { minItems: 1, maxItems: exportParts.length, uniqueItems: true })

export const StartExportBody = Type.Object({ include: Include }, { additionalProperties: false })
/** The preview's body is optional; without `include` it previews every part. */
export const ExportPreviewBody = Type.Object({ include: Type.Optional(Include) }, { additionalProperties: false })

export const ExportPreview = Type.Object({
  include: Type.Array(ExportPartSchema),
  squad: Type.Optional(Type.Object({ name: Type.String(), slug: Type.String() })),
  agents: Type.Optional(Type.Integer({ description: 'agents the bundle would carry' })),
  issues: Type.Optional(Type.Integer({ description: 'issues the bundle would carry' })),
  skills: Type.Optional(Type.Integer({ description: 'skills the bundle would carry' })),
})

export const ExportStarted = Type.Object({ jobId: Uuid, status: Type.Literal('queued') })

/** An export is a job: its fields, with the parts asked for (from the job's payload). */
export const ExportJobSchema = Type.Object(
  {
    ...Type.Pick(JobRecord, ['id', 'squadId', 'status']).properties,
    include: Type.Array(ExportPartSchema),
    ...Type.Pick(JobRecord, ['createdAt', 'finishedAt', 'error']).properties,
  },
  { $id: 'ExportJob', title: 'ExportJob' },
)

export const presentExportJob = (job: Job): Static<typeof ExportJobSchema> => ({
  id: job.id,
  squadId: job.squadId,
  status: job.status,
  include: (Array.isArray(job.payload.include) ? job.payload.include : []) as ExportPart[],
  createdAt: iso(job.createdAt),
  finishedAt: isoOrNull(job.finishedAt),
  error: job.error,
})

// Imports ----------------------------------------------------------------------------------------

export const ImportBody = Type.Object(
  {
    source: Type.String({ minLength: 1, maxLength: 4096, description: 'an absolute or ./-relative path to a bundle file, or owner/repo[@ref]/path on GitHub' }),
    collision: Type.Optional(
      Type.Union(
        collisionPolicies.map((p) => Type.Literal(p)),
        { default: 'rename' },
      ),
    ),
  },
  { additionalProperties: false },
)
