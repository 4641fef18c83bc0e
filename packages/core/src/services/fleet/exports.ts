import { JobRejected } from '../runs/jobs.js'
import { SlawError, notFound } from '../../errors.js'
import type { Agent, Issue, Job } from '../../records.js'
import { bundleFormat, bundleVersion, exportParts, type BundleAgent, type BundleIssue, type BundleSkill, type ExportPart, type SquadBundle } from './bundle.js'
import { assertSquadVisible, requireOperator, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import { recordActivity } from '../audit/activity-recorder.js'
import type { SquadService } from '../org/squads.js'

/** The job kind export jobs are stored under; the JobRunner hands them to `ExportService.runJob`. */
const exportJobKind = 'squad_export'

export interface ExportPreviewResult {
  include: ExportPart[]
  squad?: { name: string; slug: string }
  agents?: number
  issues?: number
  skills?: number
}

/** Issues are read in one list call; a bundle holds at most this many (the import limit). */
const maxExportIssues = 100_000

/**
 * Squad exports: a request enqueues a job in its own transaction, a JobRunner on any node claims it
 * once (FOR UPDATE SKIP LOCKED) and stores the bundle as the job's result, where the download reads it.
 */
export class ExportService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
  ) {}

  /** What an export with `include` would carry, counted now. Writes nothing. */
  async preview(actor: Actor, squadId: string, include: readonly ExportPart[] = exportParts): Promise<ExportPreviewResult> {
    requireOperator(actor)
    const squad = await this.squads.visible(this.ctx.storage, actor, squadId)
    const parts = normalizeInclude(include)
    const out: ExportPreviewResult = { include: parts }
    if (parts.includes('squad')) out.squad = { name: squad.name, slug: squad.slug }
    if (parts.includes('agents')) out.agents = (await this.exportableAgents(squadId)).length
    if (parts.includes('issues')) out.issues = (await this.ctx.storage.issues.list({ squadId, limit: maxExportIssues })).length
    if (parts.includes('skills')) out.skills = (await this.ctx.storage.skills.list(squadId)).length
    return out
  }

  /** Enqueues an export job; answers at once with the queued job. */
  async start(actor: Actor, squadId: string, include: readonly ExportPart[]): Promise<Job> {
    requireOperator(actor)
    const parts = normalizeInclude(include)
    const job = await this.ctx.storage.transaction(async (tx) => {
      await this.squads.visible(tx, actor, squadId)
      const queued = await tx.jobs.enqueue({ id: uuidv7(), kind: exportJobKind, squadId, payload: { include: parts } })
      await recordActivity(tx, actor, {
        squadId,
        action: 'squad.export_requested',
        entityType: 'squad',
        entityId: squadId,
        details: { jobId: queued.id, include: parts.join(',') },
      })
      return queued
    })
    // After commit: a runner that looked before the commit would not have seen the job.
    this.ctx.kickJobs()
    return job
  }

  /** An export job, or 404 (unknown ids, malformed ids and jobs of other kinds alike). */
  async job(actor: Actor, jobId: string): Promise<Job> {
    requireOperator(actor)
    if (!isUuid(jobId)) throw notFound('Export')
    const job = await this.ctx.storage.jobs.get(jobId)
    if (!job || job.kind !== exportJobKind || !job.squadId) throw notFound('Export')
    assertSquadVisible(actor, job.squadId, 'Export')
    return job
  }

  /** The finished bundle; 422 `invalid_state` while the job is queued or running, or when it failed. */
  async download(actor: Actor, jobId: string): Promise<SquadBundle> {
    const job = await this.job(actor, jobId)
    if (job.status === 'failed') throw new SlawError('invalid_state', `The export failed: ${job.error ?? 'unknown error'}`)
    if (job.status !== 'completed' || !job.result) {
      throw new SlawError('invalid_state', `The export is ${job.status}; poll GET /api/exports/${job.id} until it is completed.`)
    }
    return job.result as unknown as SquadBundle
  }

  /** The JobRunner handler for `squad_export`: builds the bundle, which becomes the job's result. */
  async runJob(job: Job): Promise<Record<string, unknown>> {
    if (!job.squadId) throw new JobRejected('An export job needs a squad.')
    const include = Array.isArray(job.payload.include) ? (job.payload.include as unknown[]).filter(isPart) : []
    if (!include.length) throw new JobRejected('An export job needs at least one part to include.')
    return (await this.build(job.squadId, include)) as unknown as Record<string, unknown>
  }

  /**
   * Reads the squad and writes the bundle. No keys, tokens, secrets, adapter configs, permissions,
   * budgets or runtime state: only what recreates the squad's shape and work elsewhere.
   */
  async build(squadId: string, include: readonly ExportPart[]): Promise<SquadBundle> {
    const { storage } = this.ctx
    const squad = await storage.squads.get(squadId)
    if (!squad) throw new Error('The squad no longer exists.')
    const parts = normalizeInclude(include)
    const bundle: SquadBundle = { format: bundleFormat, version: bundleVersion, exportedAt: this.ctx.now().toISOString() }
    if (parts.includes('squad')) bundle.squad = { name: squad.name, slug: squad.slug }
    if (parts.includes('agents')) bundle.agents = exportAgents(await this.exportableAgents(squadId))
    if (parts.includes('issues')) bundle.issues = await this.exportIssues(squadId)
    if (parts.includes('skills')) bundle.skills = await this.skills(squadId)
    return bundle
  }

  /** Terminated agents are gone for good; an export carries the squad's living members. */
  private async exportableAgents(squadId: string): Promise<Agent[]> {
    return (await this.ctx.storage.agents.list(squadId)).filter((a) => a.status !== 'terminated')
  }

  private async exportIssues(squadId: string): Promise<BundleIssue[]> {
    const { storage } = this.ctx
    const agentNames = new Map((await storage.agents.list(squadId)).map((a) => [a.id, a.name]))
    const summaries = await storage.issues.list({ squadId, limit: maxExportIssues })
    const issues: Array<{ issue: Issue; blockers: string[] }> = []
    for (const s of summaries) {
      const issue = await storage.issues.get(s.id)
      // Deleted since the list was read.
      if (!issue) continue
      issues.push({ issue, blockers: (await storage.issues.blockedBy(issue.id)).map((b) => b.id) })
    }
    issues.sort((a, b) => a.issue.number - b.issue.number)
    // References point inside the bundle only, so every bundle this writes imports on its own.
    const identifiers = new Map(issues.map(({ issue }) => [issue.id, issue.identifier]))
    return issues.map(({ issue, blockers }) => ({
      identifier: issue.identifier,
      title: issue.title,
      description: issue.description,
      status: issue.status,
      priority: issue.priority,
      assignee: (issue.assigneeAgentId && agentNames.get(issue.assigneeAgentId)) || null,
      parent: (issue.parentId && identifiers.get(issue.parentId)) || null,
      blockedBy: blockers.map((id) => identifiers.get(id)).filter((x): x is string => !!x),
    }))
  }

  /** Squad skills with their content (tower copies included: in another squad they are local skills). */
  private async skills(squadId: string): Promise<BundleSkill[]> {
    return (await this.ctx.storage.skills.listWithContent(squadId)).map((s) => ({
      key: s.key,
      name: s.name,
      description: s.description,
      markdown: s.markdown,
      files: s.files.map((f) => ({ path: f.path, content: f.content, encoding: f.encoding })),
    }))
  }
}

function exportAgents(agents: Agent[]): BundleAgent[] {
  const names = new Map(agents.map((a) => [a.id, a.name]))
  return agents.map((a) => ({
    name: a.name,
    role: a.role,
    title: a.title,
    adapterType: a.adapterType,
    reportsTo: (a.reportsToAgentId && names.get(a.reportsToAgentId)) || null,
    desiredSkills: [...a.desiredSkills],
    prompt: a.prompt,
  }))
}

function isPart(x: unknown): x is ExportPart {
  return typeof x === 'string' && (exportParts as readonly string[]).includes(x)
}

/** Parts in their canonical order, each once. */
function normalizeInclude(include: readonly ExportPart[]): ExportPart[] {
  return exportParts.filter((p) => include.includes(p))
}
