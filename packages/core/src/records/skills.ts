import { Type, type StaticDecode } from '@sinclair/typebox'
import { DateTime, JsonObject, Nullable, OneOf, Uuid } from './fields.js'

// Records of skills: squad skills and the tower's catalog as this instance last pulled it.

/** How a squad skill came to be: written through the API, read from a file, or copied from the tower. */
export const skillSourceTypes = ['local', 'import', 'tower'] as const
export type SkillSourceType = (typeof skillSourceTypes)[number]

/** An inline file of a skill. `base64` content is binary; `utf8` content is text without NUL. */
export const SkillFileEntryRecord = Type.Object({
  path: Type.String(),
  content: Type.String(),
  encoding: OneOf(['utf8', 'base64']),
})
export type SkillFileEntry = StaticDecode<typeof SkillFileEntryRecord>

export const SquadSkillRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  /** Unique within the squad; never changes. */
  key: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  markdown: Type.String(),
  files: Type.Array(SkillFileEntryRecord),
  sourceType: OneOf(skillSourceTypes),
  trustLevel: Type.String(),
  /** Grows by one on every change (for a tower copy: the catalog skill's own version). */
  version: Type.Integer(),
  /** Hex SHA-256 of markdown and files (see `skillContentHash`). */
  contentHash: Type.String(),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type SquadSkill = StaticDecode<typeof SquadSkillRecord>

/** One skill of the tower's catalog, with its content, as this instance stored it. */
export const CatalogSkillRecord = Type.Object({
  key: Type.String(),
  slug: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  category: Nullable(Type.String()),
  trustLevel: Type.String(),
  /** The tower's per-skill version. */
  version: Type.Integer(),
  contentHash: Type.String(),
  hasFiles: Type.Boolean(),
  metadata: Nullable(JsonObject()),
  markdown: Type.String(),
  files: Type.Array(SkillFileEntryRecord),
  /** The descriptor's `updatedAt` on the tower. */
  updatedAt: DateTime,
  /** The catalogVersion of the pull that last wrote this row. */
  catalogVersion: Type.Integer(),
  /** When this instance last wrote the row. */
  storedAt: DateTime,
})
export type CatalogSkill = StaticDecode<typeof CatalogSkillRecord>
