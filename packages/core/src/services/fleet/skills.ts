import { lstat, readFile, readdir, stat } from 'node:fs/promises'
import { basename, dirname, extname, join, relative, resolve, sep } from 'node:path'
import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { Ajv, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { UniqueViolation, type StorageSession } from '../../contracts/storage.js'
import type {
  CatalogDescriptorWrite, CatalogSkillSummary, CatalogSkillWrite, SkillFileEntry, SkillSourceType, SquadSkill, SquadSkillPatch, SquadSkillSummary,
} from '../../contracts/skills.js'
import type { TowerSkillsHook } from '../../contracts/tower-client.js'
import { SlawError, invalid, notFound, type ErrorDetail } from '../../errors.js'
import { Skill as FullCatalogSkillSchema, SkillCatalog, type Skill as FullCatalogSkill, type SkillDescriptor } from '../../ingest/skills.js'
import type { Squad } from '../../records.js'
import { presentSkill } from '../../schemas/skills.js'
import { requireOperator, systemActor, visibleById, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { uuidv7 } from '../foundation/ids.js'
import { recordActivity } from '../audit/activity-recorder.js'
import {
  catalogKeyPattern, keyFrom, readFrontMatter, skillContentHash, skillContentProblems, skillKeyPattern, skillLimits, trustLevelPattern,
} from './skill-content.js'
import type { SquadService } from '../org/squads.js'

export type { FullCatalogSkill }
/**
 * Fetches one catalog skill with its content (GET /skills/{key}). Resolve to null or undefined when
 * the tower no longer publishes it (404 `skill_not_found`); throw on anything worth retrying.
 */
export type FetchCatalogSkill = (key: string) => Promise<FullCatalogSkill | null | undefined>
/** Told of each catalog skill applyCatalog skipped because its content cannot be stored here. */
export type CatalogSkillSkipped = (key: string, problem: string) => void

export interface CreateSkillInput {
  key: string
  name: string
  description?: string | null
  markdown: string
  files?: SkillFileEntry[]
  trustLevel?: string
}
export interface UpdateSkillInput {
  name?: string
  description?: string | null
  markdown?: string
  files?: SkillFileEntry[]
  trustLevel?: string
}
export interface ImportSkillInput {
  /** A local path: a markdown file, a folder holding SKILL.md, or a .json skill in the catalog shape. */
  source: string
  key?: string
  trustLevel?: string
}

/** Trust level of skills written or imported locally unless the request names one. */
export const defaultTrustLevel = 'local'

/** `sourceType` a deleted skill's last `squad_skill` upsert carries: the tower's tombstone. */
export const deletedSourceType = 'deleted'

/** The upsert a squad skill sends to the tower (DECISIONS.md section 5); never its content. */
export function squadSkillUpsert(s: SquadSkill | SquadSkillSummary, deletedAt?: Date) {
  return {
    kind: 'upsert' as const,
    entityType: 'squad_skill',
    entityId: s.id,
    squadId: s.squadId,
    payload: {
      type: 'squad_skill',
      localId: s.id,
      squadLocalId: s.squadId,
      key: s.key,
      name: s.name,
      // Nullable keys are always present, null when empty (DECISIONS.md section 5).
      description: s.description ?? null,
      sourceType: deletedAt ? deletedSourceType : s.sourceType,
      trustLevel: s.trustLevel,
      updatedAt: (deletedAt ?? s.updatedAt).toISOString(),
    },
  }
}

// A pull fetches skills one by one; the lock only keeps two pulls of one instance from interleaving.
const catalogLockTtlMs = 10 * 60_000
/** Largest file an import reads: a .json skill carries base64 files. */
const maxImportFileBytes = skillLimits.markdownBytes + Math.ceil((skillLimits.totalFileBytes * 4) / 3) + 64 * 1024

/**
 * Squad skills and the control tower's catalog. Operators write, agents read their own squad's.
 * While the tower manages skills (the instance is enrolled), local create, import, edit and delete
 * answer 409 `skills_managed_by_tower`; skills then come from the catalog (`applyCatalog`, pulled by
 * the tower client) and reach a squad through `installFromCatalog`.
 */
export class SkillService implements TowerSkillsHook {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
  ) {}

  /** True while the tower is the master of skills. */
  managedByTower(): boolean {
    return this.ctx.towerManagesSkills()
  }

  // Reads -----------------------------------------------------------------------------------------

  async list(actor: Actor, squadId: string): Promise<SquadSkillSummary[]> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    return this.ctx.storage.skills.list(squadId)
  }

  get(actor: Actor, id: string): Promise<SquadSkill> {
    return this.visible(this.ctx.storage, actor, id)
  }

  /** A skill the actor may see, or 404 (another squad's skill included). */
  private async visible(session: StorageSession, actor: Actor, id: string): Promise<SquadSkill> {
    return visibleById(actor, id, 'Skill', (id) => session.skills.get(id))
  }

  // Local authoring -------------------------------------------------------------------------------

  /** Visibility first (404), then Operator (403), then the tower gate (409), then an archived squad (409). */
  private async authoringSquad(session: StorageSession, actor: Actor, squadId: string): Promise<Squad> {
    const squad = await this.squads.visible(session, actor, squadId)
    requireOperator(actor)
    this.assertLocalAuthoring()
    if (squad.status === 'archived') throw archived()
    return squad
  }

  private assertLocalAuthoring(): void {
    if (this.ctx.towerManagesSkills()) {
      throw new SlawError('skills_managed_by_tower', 'Skills are managed by the control tower while this instance is enrolled; install them from the catalog.')
    }
  }

  async create(actor: Actor, squadId: string, input: CreateSkillInput): Promise<SquadSkill> {
    return this.ctx.storage.transaction(async (tx) => {
      const squad = await this.authoringSquad(tx, actor, squadId)
      const draft = checkDraft({ ...input, sourceType: 'local' })
      return this.insert(tx, actor, squad, draft, 'skill.created')
    })
  }

  /** Reads the source from this machine's disk (Operator only), then stores it like a create. */
  async import(actor: Actor, squadId: string, input: ImportSkillInput): Promise<SquadSkill> {
    // Authorise before touching the disk: nobody else learns what a path holds.
    await this.authoringSquad(this.ctx.storage, actor, squadId)
    const read = await readSkillSource(input.source)
    const key = input.key ?? read.key
    if (!key) throw invalid('/key', 'No skill key could be derived from the source; send one as key')
    const draft = checkDraft({ ...read, key, trustLevel: input.trustLevel ?? read.trustLevel, sourceType: 'import' }, read.detailBase)
    if (read.contentHash !== undefined && read.contentHash !== draft.contentHash) {
      throw invalid(`${read.detailBase}/contentHash`, 'contentHash does not match the markdown and files (see docs/skills.md for the computation)')
    }
    return this.ctx.storage.transaction(async (tx) => {
      const squad = await this.authoringSquad(tx, actor, squadId)
      return this.insert(tx, actor, squad, draft, 'skill.imported', { source: basename(input.source) })
    })
  }

  private async insert(tx: StorageSession, actor: Actor, squad: Squad, draft: Draft, action: string, extra: Record<string, unknown> = {}): Promise<SquadSkill> {
    let skill: SquadSkill
    try {
      skill = await tx.skills.insert({ id: uuidv7(), squadId: squad.id, version: 1, ...draft })
    } catch (err) {
      if (err instanceof UniqueViolation && err.constraint === 'skills_squad_key') throw new SlawError('skill_key_taken', `The squad already has a skill with key ${draft.key}.`)
      throw err
    }
    await this.record(tx, actor, skill, action, extra)
    return skill
  }

  async update(actor: Actor, id: string, input: UpdateSkillInput): Promise<SquadSkill> {
    return this.ctx.storage.transaction(async (tx) => {
      const current = await this.visible(tx, actor, id)
      await this.authoringSquad(tx, actor, current.squadId)
      // Only what the request changes is checked: a tower copy's stored values follow the catalog's rules.
      const draft = checkDraft({
        key: current.key,
        name: input.name ?? current.name,
        description: input.description !== undefined ? input.description : current.description,
        markdown: input.markdown ?? current.markdown,
        files: input.files ?? current.files,
        trustLevel: input.trustLevel ?? current.trustLevel,
        sourceType: current.sourceType,
      }, '', { key: false, trustLevel: input.trustLevel !== undefined, content: input.markdown !== undefined || input.files !== undefined })
      const patch: SquadSkillPatch = {}
      if (draft.name !== current.name) patch.name = draft.name
      if (draft.description !== current.description) patch.description = draft.description
      if (draft.trustLevel !== current.trustLevel) patch.trustLevel = draft.trustLevel
      if (draft.contentHash !== current.contentHash || draft.markdown !== current.markdown || !sameFiles(draft.files, current.files)) {
        Object.assign(patch, { markdown: draft.markdown, files: draft.files, contentHash: draft.contentHash })
      }
      // Nothing changed: no new version, no activity, nothing for the tower.
      if (!Object.keys(patch).length) return current
      patch.version = current.version + 1
      // Edited here, a tower copy is this instance's own from now on: a catalog change no longer overwrites it.
      if (current.sourceType === 'tower') patch.sourceType = 'local'
      const skill = (await tx.skills.update(current.id, patch))!
      await this.record(tx, actor, skill, 'skill.updated', { changed: Object.keys(patch).filter((k) => k !== 'version').join(',') })
      return skill
    })
  }

  async delete(actor: Actor, id: string): Promise<void> {
    await this.ctx.storage.transaction(async (tx) => {
      const skill = await this.visible(tx, actor, id)
      await this.authoringSquad(tx, actor, skill.squadId)
      await this.remove(tx, actor, skill, 'skill.deleted')
    })
  }

  private async remove(tx: StorageSession, actor: Actor, skill: SquadSkill, action: string): Promise<void> {
    await tx.skills.delete(skill.id)
    await recordActivity(tx, actor, { squadId: skill.squadId, action, entityType: 'skill', entityId: skill.id, details: { key: skill.key, name: skill.name, version: skill.version } })
    await tx.outbox.append([squadSkillUpsert(skill, this.ctx.now())])
  }

  /** The activity entry and the outbox upsert of a written skill, in the caller's transaction. */
  private async record(tx: StorageSession, actor: Actor, skill: SquadSkill, action: string, extra: Record<string, unknown> = {}): Promise<void> {
    await recordActivity(tx, actor, {
      squadId: skill.squadId,
      action,
      entityType: 'skill',
      entityId: skill.id,
      details: { key: skill.key, name: skill.name, version: skill.version, contentHash: skill.contentHash, sourceType: skill.sourceType, ...extra },
    })
    await tx.outbox.append([squadSkillUpsert(skill)])
  }

  // The tower's catalog (called by the tower client) ------------------------------------------------

  /** The catalogVersion applied last, or null before the first pull (heartbeat `appliedSkillCatalogVersion`). */
  appliedCatalogVersion(): Promise<number | null> {
    return this.ctx.storage.skills.catalogVersion()
  }

  /** The pulled catalog, without content (Operator). */
  async catalog(actor: Actor): Promise<CatalogSkillSummary[]> {
    requireOperator(actor)
    return this.ctx.storage.skills.catalogList()
  }

  /**
   * Stores a pulled catalog (GET /skills). Content is fetched with `fetchSkill` only for skills that
   * are new or whose contentHash changed; skills the catalog no longer lists are removed, and so are
   * the squads' copies of them. Squads' copies (sourceType `tower`) follow every change. Returns the
   * catalogVersion now applied; a pull older than the applied one changes nothing.
   *
   * A skill whose content this instance cannot store (an unsafe file path, bad base64, NUL in text)
   * is skipped with a warning and keeps its previous content, if any; `onSkipped` hears of it, so the
   * tower client can report it. A `fetchSkill` that throws aborts the whole pull: nothing is stored
   * and the caller retries later.
   */
  async applyCatalog(catalog: SkillCatalog, fetchSkill: FetchCatalogSkill, onSkipped?: CatalogSkillSkipped): Promise<number> {
    const validate = wireValidators().catalog
    if (!validate(catalog)) {
      const e = validate.errors?.[0]
      throw new TypeError(`applyCatalog: not a skill catalog${e ? ` (${e.instancePath || '/'} ${e.message ?? 'is invalid'})` : ''}`)
    }
    const keys = new Set<string>()
    for (const d of catalog.skills) {
      if (keys.has(d.key)) throw new TypeError(`applyCatalog: key ${d.key} appears twice in the catalog`)
      keys.add(d.key)
    }
    const { storage, log } = this.ctx
    return this.ctx.locks.withLock('slaw:skill-catalog', catalogLockTtlMs, async () => {
      const applied = await storage.skills.catalogVersion()
      if (applied !== null && catalog.catalogVersion < applied) return applied
      const stored = new Map((await storage.skills.catalogList()).map((s) => [s.key, s]))
      const contentWrites: CatalogSkillWrite[] = []
      const descriptorWrites: CatalogDescriptorWrite[] = []
      const gone = new Set([...stored.keys()].filter((k) => !keys.has(k)))
      // Network calls happen before the transaction, never inside it.
      for (const d of catalog.skills) {
        const prev = stored.get(d.key)
        if (prev && prev.contentHash === d.contentHash) {
          const next = descriptorWrite(d, catalog.catalogVersion)
          if (descriptorChanged(prev, next)) descriptorWrites.push(next)
          continue
        }
        const full = await fetchSkill(d.key)
        if (!full) {
          // Unpublished between the list and the fetch.
          if (prev) gone.add(d.key)
          continue
        }
        const problems = catalogSkillProblems(full, d.key)
        if (problems.length) {
          log.warn({ skill: d.key, problems }, 'catalog skill skipped: this instance cannot store its content')
          onSkipped?.(d.key, problems.map((p) => `${p.path} ${p.message}`).join('; '))
          continue
        }
        const computed = skillContentHash(full.markdown, full.files)
        if (computed !== full.contentHash) log.debug({ skill: d.key, contentHash: full.contentHash, computed }, 'catalog skill hash differs from the local computation')
        contentWrites.push({ ...descriptorWrite(full, catalog.catalogVersion), contentHash: full.contentHash, hasFiles: full.files.length > 0, markdown: full.markdown, files: full.files.map(cleanFile) })
      }

      await storage.transaction(async (tx) => {
        await tx.skills.catalogPut(contentWrites)
        await tx.skills.catalogPutDescriptors(descriptorWrites)
        await tx.skills.catalogDelete([...gone])
        await tx.skills.setCatalogVersion(catalog.catalogVersion)
        const actor = systemActor('tower')
        for (const key of [...contentWrites, ...descriptorWrites].map((w) => w.key)) {
          const source = (await tx.skills.catalogGet(key))!
          for (const copy of await tx.skills.listTowerCopies(key)) {
            const patch = towerCopyPatch(copy, source)
            if (!patch) continue
            const skill = (await tx.skills.update(copy.id, patch))!
            await this.record(tx, actor, skill, 'skill.updated_from_tower', { catalogVersion: catalog.catalogVersion })
          }
        }
        for (const key of gone) {
          for (const copy of await tx.skills.listTowerCopies(key)) await this.remove(tx, actor, copy, 'skill.removed_by_tower')
        }
      })
      log.info(
        { catalogVersion: catalog.catalogVersion, fetched: contentWrites.length, updated: descriptorWrites.length, removed: gone.size },
        'skill catalog applied',
      )
      return catalog.catalogVersion
    })
  }

  /**
   * Copies a catalog skill into a squad (sourceType `tower`), for `POST /api/tower/skills/{key}/install`.
   * Installing again refreshes the copy. A squad skill of the same key written locally answers 409
   * `skill_key_taken`. Not subject to the tower gate: this is how skills arrive while it is on.
   */
  async installFromCatalog(actor: Actor, key: string, squadId: string): Promise<{ skill: SquadSkill; created: boolean }> {
    return this.ctx.storage.transaction(async (tx) => {
      const squad = await this.squads.visible(tx, actor, squadId)
      requireOperator(actor)
      const source = catalogKeyPattern.test(key) ? await tx.skills.catalogGet(key) : undefined
      if (!source) throw notFound('Catalog skill')
      if (squad.status === 'archived') throw archived()
      const existing = await tx.skills.getByKey(squadId, key)
      if (existing && existing.sourceType !== 'tower') {
        throw new SlawError('skill_key_taken', `The squad already has its own skill with key ${key}; delete it before installing the catalog's.`)
      }
      if (existing) {
        const patch = towerCopyPatch(existing, source)
        if (!patch) return { skill: existing, created: false }
        const skill = (await tx.skills.update(existing.id, patch))!
        await this.record(tx, actor, skill, 'skill.installed', { catalogVersion: source.catalogVersion })
        return { skill, created: false }
      }
      const skill = await tx.skills.insert({
        id: uuidv7(),
        squadId,
        key,
        name: source.name,
        description: source.description,
        markdown: source.markdown,
        files: source.files,
        sourceType: 'tower',
        trustLevel: source.trustLevel,
        version: source.version,
        contentHash: source.contentHash,
      })
      await this.record(tx, actor, skill, 'skill.installed', { catalogVersion: source.catalogVersion })
      return { skill, created: true }
    })
  }

  /** `TowerSkillsHook.installSkill`: `installFromCatalog`, presented as the skill endpoints present a skill. */
  async installSkill(input: { key: string; squadId: string; actor: Actor }): Promise<Record<string, unknown>> {
    const { skill } = await this.installFromCatalog(input.actor, input.key, input.squadId)
    return presentSkill(skill)
  }
}

// Drafts: validated content ready to store --------------------------------------------------------

/** A squad skill's content and labels, as written (the store adds ids, squad, version and times). */
type Draft = Pick<SquadSkill, 'key' | 'name' | 'description' | 'markdown' | 'files' | 'sourceType' | 'trustLevel' | 'contentHash'>

/** Validates a skill as written locally and computes its hash; throws 400 with every problem found. */
function checkDraft(input: CreateSkillInput & { sourceType: SkillSourceType }, base = '', check = { key: true, trustLevel: true, content: true }): Draft {
  const details: ErrorDetail[] = []
  const name = input.name.trim()
  const description = input.description?.trim() || null
  const files = (input.files ?? []).map(cleanFile)
  if (check.key && !skillKeyPattern.test(input.key)) details.push({ path: `${base}/key`, message: 'key must be 1-100 lowercase letters, digits, ".", "_" or "-", starting with a letter or digit' })
  if (!name) details.push({ path: `${base}/name`, message: 'name must not be blank' })
  else if (name.length > skillLimits.nameLength) details.push({ path: `${base}/name`, message: `name must be at most ${skillLimits.nameLength} characters` })
  if (description && description.length > skillLimits.descriptionLength) details.push({ path: `${base}/description`, message: `description must be at most ${skillLimits.descriptionLength} characters` })
  const trustLevel = input.trustLevel ?? defaultTrustLevel
  if (check.trustLevel && !trustLevelPattern.test(trustLevel)) details.push({ path: `${base}/trustLevel`, message: 'trustLevel must be a lowercase label (letters, digits, "_", "-")' })
  if (check.content) details.push(...skillContentProblems(input.markdown, files, { limits: true, base }))
  if (details.length) throw new SlawError('invalid_payload', details.map((d) => `${d.path} ${d.message}`).join('; '), details)
  return { key: input.key, name, description, markdown: input.markdown, files, sourceType: input.sourceType, trustLevel, contentHash: skillContentHash(input.markdown, files) }
}

const archived = (): SlawError => new SlawError('squad_archived', 'The squad is archived; its skills are read-only.')

const cleanFile = (f: SkillFileEntry): SkillFileEntry => ({ path: f.path, content: f.content, encoding: f.encoding })

function sameFiles(a: readonly SkillFileEntry[], b: readonly SkillFileEntry[]): boolean {
  return a.length === b.length && a.every((f, i) => f.path === b[i]!.path && f.encoding === b[i]!.encoding && f.content === b[i]!.content)
}

// Catalog helpers ---------------------------------------------------------------------------------

function descriptorWrite(d: SkillDescriptor, catalogVersion: number): CatalogDescriptorWrite {
  return {
    key: d.key,
    slug: d.slug,
    name: d.name,
    description: d.description ?? null,
    category: d.category ?? null,
    trustLevel: d.trustLevel,
    version: d.version,
    metadata: d.metadata ?? null,
    updatedAt: new Date(d.updatedAt),
    catalogVersion,
  }
}

function descriptorChanged(prev: CatalogSkillSummary, next: CatalogDescriptorWrite): boolean {
  return (
    prev.slug !== next.slug ||
    prev.name !== next.name ||
    prev.description !== next.description ||
    prev.category !== next.category ||
    prev.trustLevel !== next.trustLevel ||
    prev.version !== next.version ||
    prev.updatedAt.getTime() !== next.updatedAt.getTime() ||
    JSON.stringify(prev.metadata) !== JSON.stringify(next.metadata)
  )
}

// ajv-formats ships CJS with a default export; unwrap it for both module systems.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as typeof addFormatsModule
let validators: { catalog: ValidateFunction; skill: ValidateFunction } | undefined

/** Validators of the ingest wire shapes (compiled once, on first use). */
function wireValidators(): { catalog: ValidateFunction; skill: ValidateFunction } {
  if (!validators) {
    const ajv = new Ajv({ allErrors: false, strict: false })
    addFormats(ajv, ['date-time'])
    validators = { catalog: ajv.compile(SkillCatalog), skill: ajv.compile(FullCatalogSkillSchema) }
  }
  return validators
}

function catalogSkillProblems(full: FullCatalogSkill, key: string): ErrorDetail[] {
  const validate = wireValidators().skill
  if (!validate(full)) return (validate.errors ?? []).map((e) => ({ path: e.instancePath || '/', message: e.message ?? 'is invalid' }))
  if (full.key !== key) return [{ path: '/key', message: `the tower answered with skill ${full.key} for ${key}` }]
  return skillContentProblems(full.markdown, full.files, { limits: false })
}

/** What a squad's copy must change to match the catalog skill, or undefined when it already does. */
function towerCopyPatch(copy: SquadSkill, source: { name: string; description: string | null; markdown: string; files: SkillFileEntry[]; trustLevel: string; version: number; contentHash: string }): SquadSkillPatch | undefined {
  const patch: SquadSkillPatch = {}
  if (copy.name !== source.name) patch.name = source.name
  if (copy.description !== source.description) patch.description = source.description
  if (copy.trustLevel !== source.trustLevel) patch.trustLevel = source.trustLevel
  if (copy.version !== source.version) patch.version = source.version
  if (copy.contentHash !== source.contentHash || copy.markdown !== source.markdown || !sameFiles(copy.files, source.files)) {
    Object.assign(patch, { markdown: source.markdown, files: source.files, contentHash: source.contentHash })
  }
  return Object.keys(patch).length ? patch : undefined
}

// Import sources ----------------------------------------------------------------------------------

/** A skill file in the catalog's shape (GET /skills/{key}); descriptor fields beyond these are ignored. */
const JsonSkill = Type.Object({
  key: Type.Optional(Type.String()),
  name: Type.String(),
  description: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  markdown: Type.String(),
  files: Type.Optional(
    Type.Array(Type.Object({ path: Type.String(), content: Type.String(), encoding: Type.Union([Type.Literal('utf8'), Type.Literal('base64')]) })),
  ),
  trustLevel: Type.Optional(Type.String()),
  contentHash: Type.Optional(Type.String()),
})
type JsonSkill = Static<typeof JsonSkill>

interface ReadSkill {
  key: string | undefined
  name: string
  description: string | null
  markdown: string
  files: SkillFileEntry[]
  trustLevel: string | undefined
  contentHash: string | undefined
  /** Prefix for error detail paths pointing into the source. */
  detailBase: string
}

const sourceError = (message: string): SlawError => invalid('/source', message)

async function readSkillSource(sourcePath: string): Promise<ReadSkill> {
  const path = resolve(sourcePath)
  const info = await stat(path).catch(() => undefined)
  if (!info) throw sourceError(`Cannot read ${sourcePath}: no such file or folder on this machine`)
  if (info.isDirectory()) return readSkillFolder(path)
  if (!info.isFile()) throw sourceError(`${sourcePath} is neither a file nor a folder`)
  if (extname(path).toLowerCase() === '.json') return readJsonSkill(path, info.size)
  if (info.size > skillLimits.markdownBytes) throw sourceError(`${sourcePath} is larger than ${skillLimits.markdownBytes} bytes`)
  const markdown = await readText(path)
  const fileName = basename(path)
  // A SKILL.md is named after its folder; any other markdown file after itself.
  const fallbackKey = /^skill\.md$/i.test(fileName) ? basename(dirname(path)) : fileName.replace(/\.[^.]*$/, '')
  return fromMarkdown(markdown, [], fallbackKey)
}

function fromMarkdown(markdown: string, files: SkillFileEntry[], fallbackKey: string): ReadSkill {
  const fm = readFrontMatter(markdown) ?? {}
  const key = (fm.key && skillKeyPattern.test(fm.key) ? fm.key : undefined) ?? (fm.name ? keyFrom(fm.name) : undefined) ?? keyFrom(fallbackKey)
  return {
    key,
    name: fm.name?.trim() || key || fallbackKey,
    description: fm.description?.trim() || null,
    markdown,
    files,
    trustLevel: undefined,
    contentHash: undefined,
    detailBase: '',
  }
}

async function readText(path: string): Promise<string> {
  const bytes = await readFile(path).catch((err: NodeJS.ErrnoException) => {
    throw sourceError(`Cannot read ${path}: ${err.code ?? err.message}`)
  })
  const text = utf8Text(bytes)
  if (text === undefined) throw sourceError(`${path} is not UTF-8 text`)
  return text
}

/** The bytes as text when they are valid UTF-8 without NUL, else undefined. */
function utf8Text(bytes: Buffer): string | undefined {
  try {
    // ignoreBOM keeps a byte order mark in the text, so the text encodes back to the same bytes.
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)
    return text.includes('\0') ? undefined : text
  } catch {
    return undefined
  }
}

async function readJsonSkill(path: string, size: number): Promise<ReadSkill> {
  if (size > maxImportFileBytes) throw sourceError(`${path} is larger than ${maxImportFileBytes} bytes`)
  let parsed: unknown
  try {
    parsed = JSON.parse(await readText(path))
  } catch (err) {
    if (err instanceof SlawError) throw err
    throw sourceError(`${path} is not valid JSON`)
  }
  if (!Value.Check(JsonSkill, parsed)) {
    const details = [...Value.Errors(JsonSkill, parsed)].slice(0, 10).map((e) => ({ path: `/source${e.path}`, message: e.message }))
    throw new SlawError('invalid_payload', `${path} is not a skill in the catalog shape: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`, details)
  }
  const s: JsonSkill = parsed
  return {
    key: s.key,
    name: s.name,
    description: s.description ?? null,
    markdown: s.markdown,
    files: s.files ?? [],
    trustLevel: s.trustLevel,
    contentHash: s.contentHash,
    detailBase: '/source',
  }
}

/** A folder: SKILL.md plus every other regular file below it (dot files and symlinks skipped). */
async function readSkillFolder(root: string): Promise<ReadSkill> {
  const entries = await readdir(root).catch((err: NodeJS.ErrnoException) => {
    throw sourceError(`Cannot read ${root}: ${err.code ?? err.message}`)
  })
  const main = entries.find((e) => e === 'SKILL.md') ?? entries.find((e) => /^skill\.md$/i.test(e))
  if (!main) throw sourceError(`${root} holds no SKILL.md`)
  const mainPath = join(root, main)
  const mainInfo = await lstat(mainPath)
  if (!mainInfo.isFile()) throw sourceError(`${mainPath} is not a regular file`)
  if (mainInfo.size > skillLimits.markdownBytes) throw sourceError(`${mainPath} is larger than ${skillLimits.markdownBytes} bytes`)
  const markdown = await readText(mainPath)
  const files: SkillFileEntry[] = []
  let total = 0
  const walk = async (dir: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      if (name.startsWith('.')) continue
      const full = join(dir, name)
      if (full === mainPath) continue
      const info = await lstat(full)
      if (info.isDirectory()) {
        await walk(full)
        continue
      }
      if (!info.isFile()) continue
      if (files.length >= skillLimits.files) throw sourceError(`${root} holds more than ${skillLimits.files} files besides SKILL.md`)
      total += info.size
      if (info.size > skillLimits.fileBytes || total > skillLimits.totalFileBytes) {
        throw sourceError(`${root} is too large: at most ${skillLimits.fileBytes} bytes a file and ${skillLimits.totalFileBytes} bytes in all`)
      }
      const bytes = await readFile(full)
      const text = utf8Text(bytes)
      const rel = relative(root, full).split(sep).join('/')
      files.push(text !== undefined ? { path: rel, content: text, encoding: 'utf8' } : { path: rel, content: bytes.toString('base64'), encoding: 'base64' })
    }
  }
  await walk(root)
  return fromMarkdown(markdown, files, basename(root))
}
