import { basename } from 'node:path'
import { Ajv, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { UniqueViolation, type StorageSession } from '../../contracts/storage.js'
import type { CatalogDescriptorWrite, CatalogSkillSummary, CatalogSkillWrite, SkillFileEntry, SkillSourceType, SquadSkill, SquadSkillPatch, SquadSkillSummary } from '../../contracts/skills.js'
import type { TowerSkillsHook } from '../../contracts/tower-client.js'
import { SlawError, invalid, notFound, type ErrorDetail } from '../../errors.js'
import { Skill as FullCatalogSkillSchema, SkillCatalog, catalogSkillKeyPattern, type Skill as FullCatalogSkill, type SkillDescriptor } from '../../ingest/skills.js'
import type { Squad } from '../../records.js'
import { requireOperator, systemActor, visibleById, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { uuidv7 } from '../foundation/ids.js'
import { recordActivity } from '../audit/activity-recorder.js'
import { skillContentHash, skillContentProblems, skillKeyPattern, skillLimits, trustLevelPattern } from './skill-content.js'
import { confineSkillSource, readSkillSource, type SkillImportOptions } from './skill-sources.js'
import type { SquadService } from '../org/squads.js'

export type { SkillImportOptions }
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
const defaultTrustLevel = 'local'

/** `sourceType` a deleted skill's last `squad_skill` upsert carries: the tower's tombstone. */
const deletedSourceType = 'deleted'

/** The upsert a squad skill sends to the tower (docs/ingest-protocol.md); never its content. */
function squadSkillUpsert(s: SquadSkill | SquadSkillSummary, deletedAt?: Date) {
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
      // Nullable keys are always present, null when empty (docs/ingest-protocol.md: nullable keys).
      description: s.description ?? null,
      sourceType: deletedAt ? deletedSourceType : s.sourceType,
      trustLevel: s.trustLevel,
      updatedAt: (deletedAt ?? s.updatedAt).toISOString(),
    },
  }
}

// A pull fetches skills one by one; the lock only keeps two pulls of one instance from interleaving.
const catalogLockTtlMs = 10 * 60_000

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
    private readonly imports: SkillImportOptions = { dir: null, protectedPaths: [] },
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

  /**
   * Reads the source from this machine's disk (Operator only), then stores it like a create. Only
   * inside the configured skills folder, never through a link, never the data directory or master key.
   */
  async import(actor: Actor, squadId: string, input: ImportSkillInput): Promise<SquadSkill> {
    // Authorise before touching the disk: nobody else learns what a path holds.
    await this.authoringSquad(this.ctx.storage, actor, squadId)
    const read = await readSkillSource(await confineSkillSource(input.source, this.imports))
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
      const draft = checkDraft(
        {
          key: current.key,
          name: input.name ?? current.name,
          description: input.description !== undefined ? input.description : current.description,
          markdown: input.markdown ?? current.markdown,
          files: input.files ?? current.files,
          trustLevel: input.trustLevel ?? current.trustLevel,
          sourceType: current.sourceType,
        },
        '',
        { key: false, trustLevel: input.trustLevel !== undefined, content: input.markdown !== undefined || input.files !== undefined },
      )
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
      await this.record(tx, actor, skill, 'skill.updated', {
        changed: Object.keys(patch)
          .filter((k) => k !== 'version')
          .join(','),
      })
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
        contentWrites.push({
          ...descriptorWrite(full, catalog.catalogVersion),
          contentHash: full.contentHash,
          hasFiles: full.files.length > 0,
          markdown: full.markdown,
          files: full.files.map(cleanFile),
        })
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
      log.info({ catalogVersion: catalog.catalogVersion, fetched: contentWrites.length, updated: descriptorWrites.length, removed: gone.size }, 'skill catalog applied')
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
      const source = catalogSkillKeyPattern.test(key) ? await tx.skills.catalogGet(key) : undefined
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

  /** `TowerSkillsHook.installSkill`: `installFromCatalog`, answering the skill. */
  async installSkill(input: { key: string; squadId: string; actor: Actor }): Promise<SquadSkill> {
    const { skill } = await this.installFromCatalog(input.actor, input.key, input.squadId)
    return skill
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
  if (description && description.length > skillLimits.descriptionLength)
    details.push({ path: `${base}/description`, message: `description must be at most ${skillLimits.descriptionLength} characters` })
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
function towerCopyPatch(
  copy: SquadSkill,
  source: { name: string; description: string | null; markdown: string; files: SkillFileEntry[]; trustLevel: string; version: number; contentHash: string },
): SquadSkillPatch | undefined {
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
