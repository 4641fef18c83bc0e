import { Type, type Static } from '@sinclair/typebox'
import { Label, Maybe, Timestamp } from './common.js'

/**
 * A catalog skill key: 1 to 128 letters, digits, ".", "_" or "-", a letter or digit first. It is
 * also the key's path segment in GET /skills/{key}.
 */
export const SkillKey = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' })
/** `SkillKey` as one regular expression, for a key no schema checks (a path segment that answers 404). */
export const catalogSkillKeyPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

export const SkillDescriptor = Type.Object({
  key: SkillKey,
  slug: Type.String({ minLength: 1, maxLength: 128 }),
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Maybe(Type.String({ maxLength: 4000 })),
  category: Maybe(Type.String({ maxLength: 100 })),
  trustLevel: Label,
  /** Per-skill version: grows on every change of the skill. */
  version: Type.Integer({ minimum: 1 }),
  /** Hex SHA-256 of the skill's content (markdown and files); fetch the full skill when it changes. */
  contentHash: Type.String(),
  hasFiles: Type.Boolean(),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  updatedAt: Timestamp,
})
export type SkillDescriptor = Static<typeof SkillDescriptor>

/** GET /skills: the published catalog, without content. */
export const SkillCatalog = Type.Object({
  catalogVersion: Type.Integer({ minimum: 0 }),
  skills: Type.Array(SkillDescriptor),
})
export type SkillCatalog = Static<typeof SkillCatalog>

export const SkillFile = Type.Object({
  path: Type.String({ minLength: 1, maxLength: 500 }),
  content: Type.String(),
  encoding: Type.Union([Type.Literal('utf8'), Type.Literal('base64')]),
})
export type SkillFile = Static<typeof SkillFile>

/** GET /skills/{key}: one published skill with its content. */
export const Skill = Type.Composite([SkillDescriptor, Type.Object({ markdown: Type.String(), files: Type.Array(SkillFile) })])
export type Skill = Static<typeof Skill>
