import { Type, type Static } from '@sinclair/typebox'
import { issuePriorities, issueStatuses } from '../../records.js'
import { Nullable, Uuid } from '../../records/fields.js'

/**
 * The squad bundle: what an export writes and an import reads (format `slaw.squad-export`,
 * version 1), and the plan an import answers with. Owned by the fleet area; the HTTP schemas
 * (schemas/exports.ts) re-export it.
 */

/** The parts of a squad an export can carry. */
export const exportParts = ['squad', 'agents', 'issues', 'skills'] as const
export type ExportPart = (typeof exportParts)[number]

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

export const collisionPolicies = ['rename', 'skip'] as const
export type CollisionPolicy = (typeof collisionPolicies)[number]

/**
 * One line of an import plan. `name`, `identifier` or `key` is the bundle's own value; `as` is the
 * value it gets in this squad when that differs or is only known after apply; `id` appears in apply
 * results only.
 */
const ImportItemSchema = Type.Object({
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
