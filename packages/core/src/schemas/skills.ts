import { Type, type Static } from '@sinclair/typebox'
import { SquadSkillRecord, type SquadSkill, type SquadSkillSummary } from '../contracts/skills.js'
import { skillKeyPattern, skillLimits, trustLevelPattern } from '../services/fleet/skill-content.js'
import { Nullable, iso } from './common.js'

const source = (re: RegExp) => re.source

const SkillKeyString = Type.String({ pattern: source(skillKeyPattern), description: 'lowercase letters, digits, ".", "_" and "-"; at most 100 characters' })
const TrustLevel = Type.String({ pattern: source(trustLevelPattern), description: 'a label such as `local`, `community`, `verified`' })

const SkillFileSchema = Type.Object(
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

/** A skill without its content: whether it has files instead. */
const summaryFields = {
  ...Type.Omit(SquadSkillRecord, ['markdown', 'files', 'createdAt', 'updatedAt']).properties,
  hasFiles: Type.Boolean(),
  ...Type.Pick(SquadSkillRecord, ['createdAt', 'updatedAt']).properties,
}

export const SkillSummarySchema = Type.Object(summaryFields, { $id: 'SkillSummary', title: 'SkillSummary' })
export const SkillSchema = Type.Object({ ...summaryFields, markdown: SquadSkillRecord.properties.markdown, files: Type.Array(SkillFileSchema) }, { $id: 'Skill', title: 'Skill' })

// Skill presenters list their fields: `presentSkill` also answers `POST /api/tower/skills/{key}/install`,
// whose response schema lets any field through.
export const presentSkillSummary = (s: SquadSkillSummary): Static<typeof SkillSummarySchema> => ({
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

export const presentSkill = (s: SquadSkill): Static<typeof SkillSchema> => ({
  ...presentSkillSummary({ ...s, hasFiles: s.files.length > 0 }),
  markdown: s.markdown,
  files: s.files.map((f) => ({ path: f.path, content: f.content, encoding: f.encoding })),
})
