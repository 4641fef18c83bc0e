import { Value } from '@sinclair/typebox/value'
import { SkillDescriptor, type Skill, type SkillCatalog } from '@slaw/core/ingest'
import { IngestError, type IngestHttp } from './http.js'
import { recordRejection } from './rejections.js'
import type { Reporter } from './reporter.js'

type Unreadable = { key: string; problem: string }

/**
 * Pulls the tower's skill catalog (GET /skills, then each skill whose contentHash changed) into
 * core's skill store. One skill that does not read, or that this instance cannot store, is
 * reported (a rejection of type `skill`) while the others apply.
 */
export async function pullSkills(r: Reporter, http: IngestHttp, apiKey: string): Promise<void> {
  const hook = r.ctx.skills()
  if (!hook) return
  const res = await http.get<unknown>('/skills', { apiKey, signal: r.signal })
  const read = readCatalog(res.body)
  if (!read) throw new IngestError(502, 'invalid_response', 'GET /skills: the catalog does not match the protocol')
  const { catalog, unreadable } = read
  const skipped: Unreadable[] = [...unreadable]
  const descriptors = new Map(catalog.skills.map((d) => [d.key, d]))
  const fetchSkill = async (key: string): Promise<Skill | null> => {
    let one: { body: unknown }
    try {
      one = await http.get<unknown>(`/skills/${encodeURIComponent(key)}`, { apiKey, signal: r.signal })
    } catch (err) {
      // Unpublished between the list and this fetch.
      if (err instanceof IngestError && err.code === 'skill_not_found') return null
      throw err
    }
    // Core checks the shape and skips (telling onSkipped) what it cannot store.
    return withSkillDefaults(one.body, descriptors.get(key)) as Skill
  }
  const applied = await hook.applyCatalog(catalog, fetchSkill, (key, problem) => skipped.push({ key, problem }))
  for (const s of skipped) await recordRejection(r, { code: 'invalid_skill', type: 'skill', localId: s.key, message: s.problem })
  r.ctx.log.info({ catalogVersion: applied, skills: catalog.skills.length, skipped: skipped.length }, 'tower skill catalog applied')
}

/**
 * The reference tower's skills may lack `hasFiles` and `updatedAt` (docs/ingest-protocol.md):
 * `hasFiles` is derived from `files`, `updatedAt` taken from the catalog entry (else now).
 */
function withSkillDefaults(body: unknown, descriptor?: { updatedAt: string }): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return body
  const skill = body as Record<string, unknown>
  const files = skill.files
  const updatedAt = typeof skill.updatedAt === 'string' ? skill.updatedAt : (descriptor?.updatedAt ?? new Date().toISOString())
  return { ...skill, hasFiles: typeof skill.hasFiles === 'boolean' ? skill.hasFiles : Array.isArray(files) && files.length > 0, updatedAt }
}

/** The catalog with defaults filled in; descriptors that still do not read are set aside to be reported. */
function readCatalog(body: unknown): { catalog: SkillCatalog; unreadable: Unreadable[] } | undefined {
  if (!body || typeof body !== 'object') return undefined
  const { catalogVersion, skills } = body as { catalogVersion?: unknown; skills?: unknown }
  if (!Number.isInteger(catalogVersion) || (catalogVersion as number) < 0 || !Array.isArray(skills)) return undefined
  const read: SkillDescriptor[] = []
  const unreadable: Unreadable[] = []
  for (const raw of skills) {
    const d = withSkillDefaults(raw)
    if (Value.Check(SkillDescriptor, d)) {
      read.push(d)
      continue
    }
    const first = Value.Errors(SkillDescriptor, d).First()
    const key = typeof (raw as { key?: unknown })?.key === 'string' ? (raw as { key: string }).key : '?'
    const where = first ? ` (${first.path || '/'}: ${first.message})` : ''
    unreadable.push({ key, problem: `the catalog entry does not match the protocol${where}` })
  }
  return { catalog: { catalogVersion: catalogVersion as number, skills: read }, unreadable }
}
