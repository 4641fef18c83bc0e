import { readFile, stat } from 'node:fs/promises'
import { isAbsolute, resolve } from 'node:path'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { adapterConfigProblems } from '../../contracts/adapter-config.js'
import { SlawError, type ErrorDetail } from '../../errors.js'
import type { StorageSession } from '../../contracts/storage.js'
import type { Agent } from '../../records.js'
import { SquadBundle, bundleFormat, bundleVersion, type BundleAgent, type BundleIssue, type BundleSkill, type CollisionPolicy, type ImportItem, type ImportPlanView } from './bundle.js'
import { requireOperator, type Actor } from '../foundation/actor.js'
import type { AgentService } from '../org/agents.js'
import type { ServiceContext } from '../foundation/context.js'
import type { IssueService } from '../work/issues.js'
import { recordActivity } from '../audit/activity-recorder.js'
import { skillContentProblems, skillKeyPattern, skillLimits } from './skill-content.js'
import type { SkillService } from './skills.js'
import type { SquadService } from '../org/squads.js'

export interface ImportInput {
  /** An absolute or `./`/`../`-relative path to a bundle file, or `owner/repo[@ref]/path` on GitHub. */
  source: string
  /** What happens to a bundle agent whose name the squad already uses. Default `rename`. */
  collision?: CollisionPolicy
}

/** Where `owner/repo/path` references are fetched from, and how patiently. */
export interface RemoteSourceOptions {
  /** Raw-content host; `{baseUrl}/{owner}/{repo}/{ref}/{path}` is fetched. Default GitHub's. */
  baseUrl: string
  /** Whole fetch, body included. Default 15 s. */
  timeoutMs: number
  /** Largest bundle read from a file or over HTTPS. Default 32 MiB. */
  maxBytes: number
}

// Compiled on the first import, not as core loads: it was 5-25 ms of every start (docs/startup-and-memory.md).
let compiledBundle: TypeCheck<typeof SquadBundle> | undefined
const bundleCheck = () => (compiledBundle ??= TypeCompiler.Compile(SquadBundle))
const maxDetails = 20
const importLockTtlMs = 120_000

const ownerPart = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})'
const repoPart = '[A-Za-z0-9._-]{1,100}'
const refPart = '[A-Za-z0-9._-][A-Za-z0-9._+-]{0,199}'
const remotePattern = new RegExp(`^(${ownerPart})/(${repoPart})(?:@(${refPart}))?/([^?#\\\\]+)$`)

type AgentRef = { kind: 'new'; plan: AgentPlan } | { kind: 'existing'; agent: Agent }

interface AgentPlan {
  source: BundleAgent
  name: string
  reportsTo: AgentRef | null
  item: ImportItem
}

interface IssuePlan {
  source: BundleIssue
  assignee: Agent | AgentPlan | null
  parent: IssuePlan | null
  blockedBy: IssuePlan[]
  item: ImportItem
}

interface SkillPlan {
  source: BundleSkill
  item: ImportItem
}

interface Plan {
  /** Creation order: a manager before its reports. */
  agents: AgentPlan[]
  /** Creation order: a parent before its children. */
  issues: IssuePlan[]
  skills: SkillPlan[]
  view: ImportPlanView
}

/**
 * Squad imports: reads a bundle an export wrote (a local file or a GitHub reference), validates it,
 * plans what it adds, skips and renames in the target squad, and applies that plan in one
 * transaction through the agent and issue services (so activity and outbox rows come along).
 */
export class ImportService {
  /** Host applications may tune these (e.g. a GitHub Enterprise raw host, or a shorter timeout). */
  readonly remote: RemoteSourceOptions = { baseUrl: 'https://raw.githubusercontent.com', timeoutMs: 15_000, maxBytes: 32 * 1024 * 1024 }

  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
    private readonly agents: AgentService,
    private readonly issues: IssueService,
    private readonly skills: SkillService,
  ) {}

  /** What `apply` would do now. Writes nothing. */
  async preview(actor: Actor, squadId: string, input: ImportInput): Promise<ImportPlanView> {
    requireOperator(actor)
    // Squad checks first: an unknown or archived squad costs no file read or fetch.
    await this.squads.writable(this.ctx.storage, actor, squadId)
    const bundle = await this.load(input.source)
    const plan = await this.plan(this.ctx.storage, squadId, bundle, input.collision ?? 'rename')
    return plan.view
  }

  /** Applies the import in one transaction; answers what was added, skipped and resolved. */
  async apply(actor: Actor, squadId: string, input: ImportInput): Promise<ImportPlanView> {
    requireOperator(actor)
    await this.squads.writable(this.ctx.storage, actor, squadId)
    // Read (and fetch) before the transaction, so no connection is held while waiting on a network.
    const bundle = await this.load(input.source)
    const collision = input.collision ?? 'rename'
    // Two imports into one squad would plan the same free names; the lock makes the second plan after the first commits.
    return this.ctx.locks.withLock(`slaw:import:${squadId}`, importLockTtlMs, () =>
      this.ctx.storage.transaction(async (tx) => {
        await this.squads.writable(tx, actor, squadId)
        const plan = await this.plan(tx, squadId, bundle, collision)
        const created = new Map<AgentPlan, Agent>()
        const idOf = (ref: Agent | AgentPlan): string => ('source' in ref ? created.get(ref)!.id : ref.id)
        for (const a of plan.agents) {
          const agent = await this.agents.createIn(tx, actor, squadId, {
            name: a.name,
            role: a.source.role.trim(),
            adapterType: a.source.adapterType,
            title: a.source.title,
            reportsToAgentId: a.reportsTo ? (a.reportsTo.kind === 'new' ? created.get(a.reportsTo.plan)!.id : a.reportsTo.agent.id) : null,
            prompt: a.source.prompt,
            desiredSkills: a.source.desiredSkills,
          })
          created.set(a, agent)
          a.item.id = agent.id
        }
        const issueIds = new Map<IssuePlan, string>()
        for (const i of plan.issues) {
          const issue = await this.issues.create(actor, squadId, {
            title: i.source.title,
            description: i.source.description,
            // A checkout belongs to a running agent on the old squad; the work arrives unclaimed.
            status: i.source.status === 'in_progress' ? 'todo' : i.source.status,
            priority: i.source.priority,
            assigneeAgentId: i.assignee ? idOf(i.assignee) : null,
            parentId: i.parent ? issueIds.get(i.parent)! : null,
          })
          issueIds.set(i, issue.id)
          i.item.id = issue.id
          i.item.as = issue.identifier
        }
        // Blockers last: they may point at issues created later, or form cycles an order cannot satisfy.
        for (const i of plan.issues) {
          if (i.blockedBy.length)
            await tx.issues.setBlockers(
              issueIds.get(i)!,
              i.blockedBy.map((b) => issueIds.get(b)!),
            )
        }
        for (const k of plan.skills) {
          const { key, name, description, markdown, files } = k.source
          const skill = await this.skills.create(actor, squadId, { key, name, description, markdown, files })
          k.item.id = skill.id
        }
        await recordActivity(tx, actor, {
          squadId,
          action: 'squad.imported',
          entityType: 'squad',
          entityId: squadId,
          details: {
            source: input.source,
            collision,
            agents: plan.agents.length,
            issues: plan.issues.length,
            skills: plan.skills.length,
            skipped: plan.view.skipped.length,
            conflicts: plan.view.conflicts.length,
          },
        })
        return plan.view
      }),
    )
  }

  // Reading a bundle -----------------------------------------------------------------------------

  /** Reads, parses and validates a bundle. Errors name the source, never what it contains. */
  async load(source: string): Promise<SquadBundle> {
    const text = isLocalPath(source) ? await this.readLocal(source) : await this.fetchRemote(source)
    let data: unknown
    try {
      data = JSON.parse(text)
    } catch {
      // JSON.parse messages quote the text; say only that it is not JSON.
      throw sourceError('The source is not valid JSON.', 'is not valid JSON')
    }
    return validateBundle(data)
  }

  private async readLocal(source: string): Promise<string> {
    const path = resolve(source)
    let size: number
    try {
      const st = await stat(path)
      if (!st.isFile()) throw sourceError('The source path is not a file.', 'is not a file')
      size = st.size
    } catch (err) {
      if (err instanceof SlawError) throw err
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ENOTDIR') throw sourceError('No bundle file exists at the source path.', 'file not found')
      throw sourceError('The bundle file at the source path cannot be read.', 'file cannot be read')
    }
    if (size > this.remote.maxBytes) throw sourceError(`The bundle file is larger than ${this.remote.maxBytes} bytes.`, 'file too large')
    try {
      return await readFile(path, 'utf8')
    } catch {
      throw sourceError('The bundle file at the source path cannot be read.', 'file cannot be read')
    }
  }

  private async fetchRemote(source: string): Promise<string> {
    const m = remotePattern.exec(source)
    const segments = m?.[4]?.split('/') ?? []
    if (!m || segments.some((s) => s === '' || s === '.' || s === '..')) {
      throw sourceError('source must be an absolute path, a ./ or ../ relative path, or a GitHub reference owner/repo[@ref]/path.', 'must be a local path or owner/repo[@ref]/path')
    }
    const [, owner, repo, ref = 'HEAD'] = m
    const url = `${this.remote.baseUrl.replace(/\/+$/, '')}/${owner}/${repo}/${encodeURIComponent(ref)}/${segments.map(encodeURIComponent).join('/')}`
    const { timeoutMs, maxBytes } = this.remote
    const signal = AbortSignal.timeout(timeoutMs)
    let res: Response
    try {
      res = await fetch(url, { signal, redirect: 'follow', headers: { accept: 'application/json, text/plain;q=0.9, */*;q=0.1' } })
    } catch (err) {
      const why = isTimeout(err, signal) ? `no answer within ${timeoutMs} ms` : 'the host could not be reached'
      throw sourceError(`The source ${owner}/${repo} could not be fetched: ${why}.`, `unreachable: ${why}`)
    }
    if (res.status === 404) {
      await res.body?.cancel().catch(() => undefined)
      throw sourceError(`Nothing was found at the source ${source} (HTTP 404).`, 'not found (HTTP 404)')
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined)
      throw sourceError(`The source host answered HTTP ${res.status}.`, `unreachable: HTTP ${res.status}`)
    }
    const declared = Number(res.headers.get('content-length'))
    if (declared > maxBytes) {
      await res.body?.cancel().catch(() => undefined)
      throw sourceError(`The bundle is larger than ${maxBytes} bytes.`, 'too large')
    }
    const chunks: Uint8Array[] = []
    let total = 0
    try {
      for await (const chunk of res.body ?? []) {
        total += chunk.byteLength
        if (total > maxBytes) {
          await res.body?.cancel().catch(() => undefined)
          throw sourceError(`The bundle is larger than ${maxBytes} bytes.`, 'too large')
        }
        chunks.push(chunk)
      }
    } catch (err) {
      if (err instanceof SlawError) throw err
      const why = isTimeout(err, signal) ? `no complete answer within ${timeoutMs} ms` : 'the download was interrupted'
      throw sourceError(`The source ${owner}/${repo} could not be fetched: ${why}.`, `unreachable: ${why}`)
    }
    return Buffer.concat(chunks).toString('utf8')
  }

  // Planning -------------------------------------------------------------------------------------

  /**
   * Decides, against the squad as it is now, what an import adds, skips and renames. A reference
   * to an agent by name resolves to the agent this import creates from the bundle agent of that
   * name, else to the squad's own (non-terminated) agent of that name, else it is cleared.
   */
  private async plan(session: StorageSession, squadId: string, bundle: SquadBundle, collision: CollisionPolicy): Promise<Plan> {
    checkReferences(bundle)
    const view: ImportPlanView = { added: [], skipped: [], conflicts: [] }
    const existing = await session.agents.list(squadId)
    const existingByName = new Map(existing.map((a) => [a.name, a]))
    const liveByName = new Map(existing.filter((a) => a.status !== 'terminated').map((a) => [a.name, a]))
    // Names a renamed agent must avoid: the squad's and every name the bundle itself brings.
    const reserved = new Set([...existingByName.keys(), ...(bundle.agents ?? []).map((a) => a.name.trim())])
    const taken = new Set(existingByName.keys())

    const planned = new Map<string, AgentPlan>()
    const agentPlans: AgentPlan[] = []
    for (const source of bundle.agents ?? []) {
      const bundleName = source.name.trim()
      if (!this.ctx.adapters.has(source.adapterType)) {
        view.conflicts.push({ type: 'agent', name: bundleName, reason: 'adapter_not_registered', adapterType: source.adapterType, resolution: 'skipped' })
        view.skipped.push({ type: 'agent', name: bundleName, reason: 'adapter_not_registered' })
        continue
      }
      let name = bundleName
      if (taken.has(name)) {
        if (collision === 'skip') {
          view.conflicts.push({ type: 'agent', name: bundleName, reason: 'name_taken', resolution: 'skipped' })
          view.skipped.push({ type: 'agent', name: bundleName, reason: 'name_taken' })
          continue
        }
        name = freeName(bundleName, reserved)
        view.conflicts.push({ type: 'agent', name: bundleName, reason: 'name_taken', resolution: 'renamed', as: name })
      }
      taken.add(name)
      reserved.add(name)
      const item: ImportItem = name === bundleName ? { type: 'agent', name: bundleName } : { type: 'agent', name: bundleName, as: name }
      // A bundle never carries adapterConfig (it may hold paths and bindings of another host): say
      // which agents cannot be woken until an Operator sets one.
      const configProblems = adapterConfigProblems(this.ctx.adapters.get(source.adapterType)!, {})
      if (configProblems.length) {
        item.needsAdapterConfig = true
        item.message = `set adapterConfig before waking it (${source.adapterType}: ${configProblems.map((d) => `${d.path} ${d.message}`).join('; ')})`
      }
      const plan: AgentPlan = { source, name, reportsTo: null, item }
      planned.set(bundleName, plan)
      agentPlans.push(plan)
    }
    const resolveAgent = (name: string): AgentRef | null => {
      const p = planned.get(name)
      if (p) return { kind: 'new', plan: p }
      const a = liveByName.get(name)
      return a ? { kind: 'existing', agent: a } : null
    }
    for (const p of agentPlans) {
      const managerName = p.source.reportsTo?.trim()
      if (!managerName) continue
      p.reportsTo = resolveAgent(managerName)
      if (!p.reportsTo) {
        view.conflicts.push({
          type: 'agent',
          name: p.source.name.trim(),
          ...(p.item.as ? { as: p.item.as } : {}),
          reason: 'reports_to_unresolved',
          reportsTo: managerName,
          resolution: 'reports_to_cleared',
        })
      }
    }
    const agents = topological(agentPlans, (p) => (p.reportsTo?.kind === 'new' ? p.reportsTo.plan : null))
    for (const p of agents) view.added.push(p.item)

    const issuePlans = new Map<string, IssuePlan>()
    for (const source of bundle.issues ?? []) {
      const item: ImportItem = { type: 'issue', identifier: source.identifier, title: source.title.trim() }
      let assignee: Agent | AgentPlan | null = null
      const assigneeName = source.assignee?.trim()
      if (assigneeName) {
        const ref = resolveAgent(assigneeName)
        assignee = ref ? (ref.kind === 'new' ? ref.plan : ref.agent) : null
        if (!ref) view.conflicts.push({ type: 'issue', identifier: source.identifier, reason: 'assignee_unresolved', assignee: assigneeName, resolution: 'unassigned' })
      }
      issuePlans.set(source.identifier, { source, assignee, parent: null, blockedBy: [], item })
    }
    for (const p of issuePlans.values()) {
      p.parent = p.source.parent ? issuePlans.get(p.source.parent)! : null
      p.blockedBy = [...new Set(p.source.blockedBy)].map((id) => issuePlans.get(id)!)
    }
    const issues = topological([...issuePlans.values()], (p) => p.parent)
    for (const p of issues) view.added.push(p.item)

    // A skill key is what agents name in desiredSkills, so a taken key is never renamed: the squad's own skill stays.
    const skills: SkillPlan[] = []
    const skillList = bundle.skills ?? []
    const existingKeys = new Set(skillList.length ? (await session.skills.list(squadId)).map((k) => k.key) : [])
    const managedByTower = skillList.length > 0 && this.skills.managedByTower()
    for (const source of skillList) {
      const problem = managedByTower || existingKeys.has(source.key) ? undefined : skillProblem(source)
      const reason = managedByTower ? 'skills_managed_by_tower' : existingKeys.has(source.key) ? 'key_taken' : problem ? 'skill_invalid' : undefined
      if (reason) {
        view.conflicts.push({ type: 'skill', key: source.key, reason, ...(problem ? { message: problem } : {}), resolution: 'skipped' })
        view.skipped.push({ type: 'skill', key: source.key, reason })
        continue
      }
      const item: ImportItem = { type: 'skill', key: source.key, title: source.name.trim() }
      skills.push({ source, item })
      view.added.push(item)
    }
    return { agents, issues, skills, view }
  }
}

/** The first rule of docs/skills.md a bundle skill breaks here, as `path message`, or undefined. */
function skillProblem(skill: BundleSkill): string | undefined {
  const name = skill.name.trim()
  const problems = [
    ...(skillKeyPattern.test(skill.key) ? [] : [{ path: '/key', message: 'key must be 1-100 lowercase letters, digits, ".", "_" or "-"' }]),
    ...(name && name.length <= skillLimits.nameLength ? [] : [{ path: '/name', message: `name must be 1-${skillLimits.nameLength} characters` }]),
    ...((skill.description?.trim().length ?? 0) <= skillLimits.descriptionLength ? [] : [{ path: '/description', message: `description must be at most ${skillLimits.descriptionLength} characters` }]),
    ...skillContentProblems(skill.markdown, skill.files, { limits: true }),
  ]
  return problems.length ? `${problems[0]!.path} ${problems[0]!.message}` : undefined
}

/** `true` for paths the import reads from disk; everything else must be a GitHub reference. */
function isLocalPath(source: string): boolean {
  return isAbsolute(source) || /^\.{1,2}([\\/]|$)/.test(source) || /^[A-Za-z]:[\\/]/.test(source)
}

function sourceError(message: string, detail: string): SlawError {
  return new SlawError('invalid_payload', message, [{ path: '/source', message: detail }])
}

function isTimeout(err: unknown, signal: AbortSignal): boolean {
  return signal.aborted || (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError'))
}

function validateBundle(data: unknown): SquadBundle {
  // Anything that does not claim to be a bundle gets no structural details: they would describe a file's contents.
  if (!data || typeof data !== 'object' || Array.isArray(data) || (data as { format?: unknown }).format !== bundleFormat) {
    throw sourceError(`The source is not a slaw squad export (format "${bundleFormat}").`, `is not a ${bundleFormat} bundle`)
  }
  if ((data as { version?: unknown }).version !== bundleVersion) {
    throw new SlawError('invalid_payload', `This instance reads bundle version ${bundleVersion} only.`, [{ path: '/source/version', message: `must be ${bundleVersion}` }])
  }
  const check = bundleCheck()
  if (check.Check(data)) return data
  const details: ErrorDetail[] = []
  const seen = new Set<string>()
  for (const e of check.Errors(data)) {
    const path = `/source${e.path}`
    if (seen.has(path)) continue
    seen.add(path)
    details.push({ path, message: e.message })
    if (details.length >= maxDetails) break
  }
  throw new SlawError('invalid_payload', `The bundle is not valid: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`, details)
}

/** Rules the schema cannot say: unique names, references inside the bundle, no cycles, no blanks. */
function checkReferences(bundle: SquadBundle): void {
  const details: ErrorDetail[] = []
  const names = new Map<string, number>()
  const agents = bundle.agents ?? []
  agents.forEach((a, i) => {
    const name = a.name.trim()
    if (!name) details.push({ path: `/source/agents/${i}/name`, message: 'must not be blank' })
    else if (names.has(name)) details.push({ path: `/source/agents/${i}/name`, message: `duplicates agent ${names.get(name)}` })
    else names.set(name, i)
    if (!a.role.trim()) details.push({ path: `/source/agents/${i}/role`, message: 'must not be blank' })
    if (a.reportsTo?.trim() === name && name) details.push({ path: `/source/agents/${i}/reportsTo`, message: 'an agent cannot report to itself' })
  })
  const managerOf = new Map(agents.map((a) => [a.name.trim(), a.reportsTo?.trim() || null]))
  const managerCycles = cycleMembers(managerOf.keys(), (n) => managerOf.get(n) ?? null)
  agents.forEach((a, i) => {
    const name = a.name.trim()
    if (managerCycles.has(name) && managerOf.get(name) !== name) details.push({ path: `/source/agents/${i}/reportsTo`, message: 'reportsTo forms a cycle' })
  })

  const issues = bundle.issues ?? []
  const identifiers = new Map<string, number>()
  issues.forEach((issue, i) => {
    if (identifiers.has(issue.identifier)) details.push({ path: `/source/issues/${i}/identifier`, message: `duplicates issue ${identifiers.get(issue.identifier)}` })
    else identifiers.set(issue.identifier, i)
    if (!issue.title.trim()) details.push({ path: `/source/issues/${i}/title`, message: 'must not be blank' })
  })
  const keys = new Map<string, number>()
  ;(bundle.skills ?? []).forEach((k, i) => {
    if (keys.has(k.key)) details.push({ path: `/source/skills/${i}/key`, message: `duplicates skill ${keys.get(k.key)}` })
    else keys.set(k.key, i)
  })
  const parentOf = new Map(issues.map((x) => [x.identifier, x.parent]))
  const parentCycles = cycleMembers(parentOf.keys(), (id) => parentOf.get(id) ?? null)
  issues.forEach((issue, i) => {
    if (issue.parent !== null) {
      if (issue.parent === issue.identifier) details.push({ path: `/source/issues/${i}/parent`, message: 'an issue cannot be its own parent' })
      else if (!identifiers.has(issue.parent)) details.push({ path: `/source/issues/${i}/parent`, message: 'must name an issue in the bundle' })
      else if (parentCycles.has(issue.identifier)) details.push({ path: `/source/issues/${i}/parent`, message: 'parents form a cycle' })
    }
    issue.blockedBy.forEach((b, j) => {
      if (b === issue.identifier) details.push({ path: `/source/issues/${i}/blockedBy/${j}`, message: 'an issue cannot block itself' })
      else if (!identifiers.has(b)) details.push({ path: `/source/issues/${i}/blockedBy/${j}`, message: 'must name an issue in the bundle' })
    })
  })
  if (details.length) {
    const shown = details.slice(0, maxDetails)
    throw new SlawError('invalid_payload', `The bundle is not consistent: ${shown.map((d) => `${d.path} ${d.message}`).join('; ')}`, shown)
  }
}

/**
 * The keys that lie on a cycle of `next` (each key has at most one successor: a manager, a parent).
 * Iterative and linear, so a hostile bundle with a very long chain costs neither stack nor time.
 */
function cycleMembers(keys: Iterable<string>, next: (key: string) => string | null): Set<string> {
  const state = new Map<string, 'walking' | 'done'>()
  const onCycle = new Set<string>()
  for (const start of keys) {
    const path: string[] = []
    let k: string | null = start
    while (k !== null && !state.has(k)) {
      state.set(k, 'walking')
      path.push(k)
      k = next(k)
    }
    if (k !== null && state.get(k) === 'walking') for (const member of path.slice(path.indexOf(k))) onCycle.add(member)
    for (const p of path) state.set(p, 'done')
  }
  return onCycle
}

/** `name (2)`, `name (3)`, … the first one free, kept within the 100-character name limit. */
function freeName(base: string, taken: Set<string>): string {
  for (let n = 2; ; n++) {
    const suffix = ` (${n})`
    const candidate = `${base.slice(0, 100 - suffix.length)}${suffix}`
    if (!taken.has(candidate)) return candidate
  }
}

/** Orders `items` so each comes after its dependency (an acyclic chain: manager, parent). Iterative. */
function topological<T>(items: T[], dep: (item: T) => T | null): T[] {
  const out: T[] = []
  const done = new Set<T>()
  for (const item of items) {
    const chain: T[] = []
    for (let x: T | null = item; x !== null && !done.has(x); x = dep(x)) {
      done.add(x)
      chain.push(x)
    }
    for (let i = chain.length - 1; i >= 0; i--) out.push(chain[i]!)
  }
  return out
}
