import { SlawError, invalid, notFound } from '../../errors.js'
import { UniqueViolation, type SquadRowLock, type StorageSession } from '../../contracts/storage.js'
import type { Agent, Squad } from '../../records.js'
import { assertSquadVisible, requireOperator, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import { outboxUpserts, recordActivity } from '../audit/activity-recorder.js'
import { checkName } from '../foundation/names.js'

const slugPattern = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

function slugify(name: string): string {
  const s = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/g, '')
  return s || 'squad'
}

/**
 * Issue identifier prefixes: up to 4 uppercase letters from the slug (docs/issues.md), unique across
 * the instance so an identifier alone names one issue. Candidates in order of preference.
 */
function prefixCandidates(slug: string): string[] {
  const letters = slug.replace(/[^a-z]/gi, '').toUpperCase() || 'SQ'
  const base = letters.slice(0, 4)
  const out = [base]
  const head = letters.slice(0, Math.min(3, letters.length))
  for (const c of letters.slice(3)) out.push(head + c)
  for (let c = 65; c <= 90; c++) out.push(head + String.fromCharCode(c))
  for (let a = 65; a <= 90; a++) for (let b = 65; b <= 90; b++) out.push(letters.slice(0, 2) + String.fromCharCode(a, b))
  return [...new Set(out)]
}

export interface OrgNode {
  id: string
  name: string
  role: string
  title: string | null
  status: Agent['status']
  reports: OrgNode[]
}

export class SquadService {
  constructor(private readonly ctx: ServiceContext) {}

  /** Loads a squad the actor may see, or 404. */
  async visible(session: StorageSession, actor: Actor, squadId: string, lock?: SquadRowLock): Promise<Squad> {
    if (!isUuid(squadId)) throw notFound('Squad')
    assertSquadVisible(actor, squadId, 'Squad')
    const squad = await session.squads.get(squadId, lock ? { lock } : {})
    if (!squad) throw notFound('Squad')
    return squad
  }

  /**
   * Like `visible`, and refuses writes to an archived squad. With `lock`, the squad row stays locked
   * until the transaction ends, so an archive that commits meanwhile cannot let this write land in
   * an archived squad (`archive` updates the row, which waits for these locks).
   */
  async writable(session: StorageSession, actor: Actor, squadId: string, lock?: SquadRowLock): Promise<Squad> {
    return this.writableRow(actor, squadId, () => session.squads.get(squadId, lock ? { lock } : {}))
  }

  /** `writable` for a caller that reads the row itself (a batch reading each squad once). */
  async writableRow(actor: Actor, squadId: string, read: () => Promise<Squad | undefined>): Promise<Squad> {
    if (!isUuid(squadId)) throw notFound('Squad')
    assertSquadVisible(actor, squadId, 'Squad')
    const squad = await read()
    if (!squad) throw notFound('Squad')
    if (squad.status === 'archived') throw new SlawError('squad_archived')
    return squad
  }

  async list(actor: Actor): Promise<Squad[]> {
    const { storage } = this.ctx
    return actor.type === 'agent' ? storage.squads.list({ ids: [actor.squadId] }) : storage.squads.list()
  }

  get(actor: Actor, squadId: string): Promise<Squad> {
    return this.visible(this.ctx.storage, actor, squadId)
  }

  async create(actor: Actor, input: { name: string; slug?: string }): Promise<Squad> {
    requireOperator(actor)
    const name = checkName('/name', input.name)
    if (input.slug !== undefined && !slugPattern.test(input.slug)) {
      throw invalid('/slug', 'slug must be lowercase letters, digits and single dashes')
    }
    // Choosing a free slug and prefix is read-then-write: serialise creates (rare) across nodes so
    // that two at once never pick the same ones. The unique indexes stay the final guard.
    return this.ctx.locks.withLock('slaw:squads:create', 10_000, () =>
      this.ctx.storage.transaction(async (tx) => {
        const slug = input.slug ?? (await this.freeSlug(tx, slugify(name)))
        const candidates = prefixCandidates(slug)
        const taken = new Set(await tx.squads.takenPrefixes(candidates))
        const issuePrefix = candidates.find((c) => !taken.has(c))
        if (!issuePrefix) throw new SlawError('conflict', 'No free issue prefix for that slug; choose another slug.')
        let squad: Squad
        try {
          squad = await tx.squads.insert({ id: uuidv7(), name, slug, issuePrefix })
        } catch (err) {
          if (err instanceof UniqueViolation && err.constraint === 'squads_slug') throw new SlawError('slug_taken')
          if (err instanceof UniqueViolation && err.constraint === 'squads_issue_prefix') throw new SlawError('conflict', 'Another squad took that issue prefix at the same moment; retry.')
          throw err
        }
        await recordActivity(tx, actor, { squadId: squad.id, action: 'squad.created', entityType: 'squad', entityId: squad.id, details: { name, slug } })
        await tx.outbox.append([outboxUpserts.squad(squad)])
        return squad
      }),
    )
  }

  private async freeSlug(tx: StorageSession, base: string): Promise<string> {
    const existing = new Set((await tx.squads.list()).map((s) => s.slug))
    if (!existing.has(base)) return base
    for (let n = 2; ; n++) if (!existing.has(`${base}-${n}`)) return `${base}-${n}`
  }

  async update(actor: Actor, squadId: string, input: { name?: string }): Promise<Squad> {
    return this.ctx.storage.transaction(async (tx) => {
      // Visibility first: another squad's agent gets 404 here too, never 403 (docs/authorization.md).
      await this.visible(tx, actor, squadId)
      requireOperator(actor)
      const patch: { name?: string } = {}
      if (input.name !== undefined) {
        const name = checkName('/name', input.name)
        patch.name = name
      }
      const squad = (await tx.squads.update(squadId, patch))!
      await recordActivity(tx, actor, { squadId, action: 'squad.updated', entityType: 'squad', entityId: squadId, details: patch })
      await tx.outbox.append([outboxUpserts.squad(squad)])
      return squad
    })
  }

  async archive(actor: Actor, squadId: string): Promise<void> {
    await this.ctx.storage.transaction(async (tx) => {
      await this.visible(tx, actor, squadId)
      requireOperator(actor)
      const squad = (await tx.squads.update(squadId, { status: 'archived' }))!
      const paused = await tx.agents.setStatusForSquad(squadId, 'paused', 'squad_archived')
      await recordActivity(tx, actor, { squadId, action: 'squad.archived', entityType: 'squad', entityId: squadId, details: { pausedAgents: paused } })
      await tx.outbox.append([outboxUpserts.squad(squad), ...(await tx.agents.list(squadId)).map((a) => outboxUpserts.agent(a))])
    })
  }

  async delete(actor: Actor, squadId: string): Promise<void> {
    await this.ctx.storage.transaction(async (tx) => {
      const squad = await this.visible(tx, actor, squadId)
      requireOperator(actor)
      await tx.outbox.append([outboxUpserts.squad(squad, 0, true)])
      await tx.squads.delete(squadId)
    })
    // The squad's agent keys went with it: cached sessions on this node must end now.
    this.ctx.principalsChanged()
  }

  async org(actor: Actor, squadId: string): Promise<{ squadId: string; roots: OrgNode[] }> {
    await this.visible(this.ctx.storage, actor, squadId)
    const agents = await this.ctx.storage.agents.list(squadId)
    const nodes = new Map<string, OrgNode>(agents.map((a) => [a.id, { id: a.id, name: a.name, role: a.role, title: a.title, status: a.status, reports: [] }]))
    const roots: OrgNode[] = []
    for (const a of agents) {
      const node = nodes.get(a.id)!
      const manager = a.reportsToAgentId ? nodes.get(a.reportsToAgentId) : undefined
      if (manager && manager !== node) manager.reports.push(node)
      else roots.push(node)
    }
    return { squadId, roots }
  }
}
