import { Type } from '@sinclair/typebox'
import type { CatalogSkillSummary, SquadSkill, SquadSkillSummary } from '../contracts/skills.js'
import { catalogKeyPattern, skillKeyPattern, skillLimits, trustLevelPattern } from '../services/skill-content.js'
import { Nullable, Timestamp, Uuid, iso } from './common.js'

// The tower's catalog on the wire is the ingest contract's (SkillCatalog, Skill in ../ingest/skills.ts).
export { SkillCatalog, Skill as CatalogSkillContent, SkillDescriptor as CatalogSkillDescriptor } from '../ingest/skills.js'

const source = (re: RegExp) => re.source

export const SkillKeyString = Type.String({ pattern: source(skillKeyPattern), description: 'lowercase letters, digits, ".", "_" and "-"; at most 100 characters' })
const TrustLevel = Type.String({ pattern: source(trustLevelPattern), description: 'a label such as `local`, `community`, `verified`' })
const SourceType = Type.Union([Type.Literal('local'), Type.Literal('import'), Type.Literal('tower')])

export const SkillFileSchema = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: skillLimits.pathLength, description: 'relative, "/"-separated, no "." or ".." segments' }),
    content: Type.String(),
    encoding: Type.Union([Type.Literal('utf8'), Type.Literal('base64')]),
  },
  // No $id: bodies embed it twice, and one Ajv instance compiles them all.
  { additionalProperties: false },
)

const Name = Type.String({ minLength: 1, maxLength: skillLimits.nameLength })
const Description = Nullable(Type.String({ maxLength: skillLimits.descriptionLength }))
// Byte limits (UTF-8, decoded files) are checked by the service; these bound the parse.
const Markdown = Type.String({ minLength: 1, maxLength: skillLimits.markdownBytes })
const Files = Type.Array(SkillFileSchema, { maxItems: skillLimits.files })

export const CreateSkillBody = Type.Object(
  {
    key: SkillKeyString,
    name: Name,
    description: Type.Optional(Description),
    markdown: Markdown,
    files: Type.Optional(Files),
    trustLevel: Type.Optional(TrustLevel),
  },
  { additionalProperties: false },
)

/** The key never changes: agents' `desiredSkills` and the tower refer to it. */
export const UpdateSkillBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    markdown: Type.Optional(Markdown),
    files: Type.Optional(Files),
    trustLevel: Type.Optional(TrustLevel),
  },
  { additionalProperties: false },
)

export const ImportSkillBody = Type.Object(
  {
    source: Type.String({ minLength: 1, maxLength: 4096, description: 'a local path: a SKILL.md (or any .md) file, a folder holding SKILL.md, or a .json skill in the catalog shape' }),
    key: Type.Optional(SkillKeyString),
    trustLevel: Type.Optional(TrustLevel),
  },
  { additionalProperties: false },
)

export const SkillIdParams = Type.Object({ id: Type.String({ maxLength: 200 }) })

const summaryFields = {
  id: Uuid,
  squadId: Uuid,
  key: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  sourceType: SourceType,
  trustLevel: Type.String(),
  version: Type.Integer(),
  contentHash: Type.String(),
  hasFiles: Type.Boolean(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
}

export const SkillSummarySchema = Type.Object(summaryFields, { $id: 'SkillSummary', title: 'SkillSummary' })
export const SkillSchema = Type.Object(
  { ...summaryFields, markdown: Type.String(), files: Type.Array(SkillFileSchema) },
  { $id: 'Skill', title: 'Skill' },
)

/** A skill of the pulled tower catalog, without content (for the tower controls). */
export const CatalogSkillSchema = Type.Object(
  {
    key: Type.String(),
    slug: Type.String(),
    name: Type.String(),
    description: Nullable(Type.String()),
    category: Nullable(Type.String()),
    trustLevel: Type.String(),
    version: Type.Integer(),
    contentHash: Type.String(),
    hasFiles: Type.Boolean(),
    metadata: Nullable(Type.Record(Type.String(), Type.Unknown())),
    updatedAt: Timestamp,
    catalogVersion: Type.Integer(),
  },
  { $id: 'CatalogSkill', title: 'CatalogSkill' },
)

export const presentSkillSummary = (s: SquadSkillSummary) => ({
  id: s.id,
  squadId: s.squadId,
  key: s.key,
  name: s.name,
  description: s.description,
  sourceType: s.sourceType,
  trustLevel: s.trustLevel,
  version: s.version,
  contentHash: s.contentHash,
  hasFiles: s.hasFiles,
  createdAt: iso(s.createdAt),
  updatedAt: iso(s.updatedAt),
})

export const presentSkill = (s: SquadSkill) => ({
  ...presentSkillSummary({ ...s, hasFiles: s.files.length > 0 }),
  markdown: s.markdown,
  files: s.files.map((f) => ({ path: f.path, content: f.content, encoding: f.encoding })),
})

export const presentCatalogSkill = (s: CatalogSkillSummary) => ({
  key: s.key,
  slug: s.slug,
  name: s.name,
  description: s.description,
  category: s.category,
  trustLevel: s.trustLevel,
  version: s.version,
  contentHash: s.contentHash,
  hasFiles: s.hasFiles,
  metadata: s.metadata,
  updatedAt: iso(s.updatedAt),
  catalogVersion: s.catalogVersion,
})

/** Catalog keys in a path (`/api/tower/skills/{key}/install`): the ingest key rule. */
export const CatalogKeyParams = Type.Object({ key: Type.String({ pattern: source(catalogKeyPattern) }) })
