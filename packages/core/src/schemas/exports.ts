import { Type, type Static } from '@sinclair/typebox'
import { JobRecord, issuePriorities, issueStatuses, type Job } from '../records.js'
import { Nullable, Uuid, iso, isoOrNull } from './common.js'

/** The parts of a squad an export can carry. */
export const exportParts = ['squad', 'agents', 'issues', 'skills'] as const
export type ExportPart = (typeof exportParts)[number]
export const ExportPartSchema = Type.Union(exportParts.map((p) => Type.Literal(p)))
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

// The bundle -------------------------------------------------------------------------------------
// Limits match the create bodies of agents and issues, so whatever validates here can be written.

const IssueStatus = Type.Union(issueStatuses.map((s) => Type.Literal(s)))
const IssuePriority = Type.Union(issuePriorities.map((p) => Type.Literal(p)))
const AgentName = Type.String({ minLength: 1, maxLength: 100 })
const IssueIdentifier = Type.String({ minLength: 1, maxLength: 64 })

export const BundleAgent = Type.Object(
  {
    name: AgentName,
    role: Type.String({ minLength: 1, maxLength: 100 }),
    title: Nullable(Type.String({ maxLength: 200 })),
    adapterType: Type.String({ minLength: 1, maxLength: 100 }),
    reportsTo: Nullable(AgentName),
    desiredSkills: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 100 }),
    prompt: Nullable(Type.String({ maxLength: 100_000 })),
  },
  { additionalProperties: false },
)

export const BundleIssue = Type.Object(
  {
    identifier: IssueIdentifier,
    title: Type.String({ minLength: 1, maxLength: 500 }),
    description: Nullable(Type.String({ maxLength: 200_000 })),
    status: IssueStatus,
    priority: IssuePriority,
    assignee: Nullable(AgentName),
    parent: Nullable(IssueIdentifier),
    blockedBy: Type.Array(IssueIdentifier, { maxItems: 200 }),
  },
  { additionalProperties: false },
)

/**
 * A squad skill in a bundle: its key, name and content. Limits here only bound memory; whether a
 * skill can be written in the target squad is the skill rules' call (docs/skills.md), per skill.
 */
export const BundleSkill = Type.Object(
  {
    key: Type.String({ minLength: 1, maxLength: 200 }),
    name: Type.String({ minLength: 1, maxLength: 1_000 }),
    description: Nullable(Type.String({ maxLength: 100_000 })),
    markdown: Type.String({ maxLength: 8_000_000 }),
    files: Type.Array(
      Type.Object(
        {
          path: Type.String({ minLength: 1, maxLength: 1_000 }),
          content: Type.String(),
          encoding: Type.Union([Type.Literal('utf8'), Type.Literal('base64')]),
        },
        { additionalProperties: false },
      ),
      { maxItems: 1_000 },
    ),
  },
  { additionalProperties: false },
)

export const bundleFormat = 'slaw.squad-export'
export const bundleVersion = 1

/**
 * A squad export, version 1 (docs/exports-and-imports.md). A part is present only when it was
 * included. No keys, tokens, secrets, adapter configs, budgets or runtime state, ever.
 */
export const SquadBundle = Type.Object(
  {
    format: Type.Literal(bundleFormat),
    version: Type.Literal(bundleVersion),
    // Informational only; a plain string so the bundle validator needs no format registry.
    exportedAt: Type.String({ minLength: 1, maxLength: 64 }),
    squad: Type.Optional(Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }), slug: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false })),
    agents: Type.Optional(Type.Array(BundleAgent, { maxItems: 10_000 })),
    issues: Type.Optional(Type.Array(BundleIssue, { maxItems: 100_000 })),
    skills: Type.Optional(Type.Array(BundleSkill, { maxItems: 1_000 })),
  },
  { additionalProperties: false, $id: 'SquadExportBundle', title: 'SquadExportBundle' },
)
export type SquadBundle = Static<typeof SquadBundle>
export type BundleAgent = Static<typeof BundleAgent>
export type BundleIssue = Static<typeof BundleIssue>
export type BundleSkill = Static<typeof BundleSkill>

// Imports ----------------------------------------------------------------------------------------

export const collisionPolicies = ['rename', 'skip'] as const
export type CollisionPolicy = (typeof collisionPolicies)[number]

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

/**
 * One line of an import plan. `name`, `identifier` or `key` is the bundle's own value; `as` is the
 * value it gets in this squad when that differs or is only known after apply; `id` appears in apply
 * results only.
 */
export const ImportItemSchema = Type.Object({
  type: Type.Union([Type.Literal('agent'), Type.Literal('issue'), Type.Literal('skill')]),
  name: Type.Optional(Type.String()),
  identifier: Type.Optional(Type.String()),
  key: Type.Optional(Type.String()),
  title: Type.Optional(Type.String()),
  as: Type.Optional(Type.String()),
  id: Type.Optional(Uuid),
  reason: Type.Optional(Type.String()),
  resolution: Type.Optional(Type.String()),
  adapterType: Type.Optional(Type.String()),
  reportsTo: Type.Optional(Type.String()),
  assignee: Type.Optional(Type.String()),
  /** Why a skill cannot be written here (the first rule it breaks); for an agent, what its adapterConfig lacks. */
  message: Type.Optional(Type.String()),
  /** An added agent whose adapter needs config that a bundle never carries: it cannot be woken until an Operator sets `adapterConfig`. */
  needsAdapterConfig: Type.Optional(Type.Boolean()),
})
export type ImportItem = Static<typeof ImportItemSchema>

export const ImportPlanSchema = Type.Object({
  added: Type.Array(ImportItemSchema),
  skipped: Type.Array(ImportItemSchema),
  conflicts: Type.Array(ImportItemSchema),
})
export type ImportPlanView = Static<typeof ImportPlanSchema>
