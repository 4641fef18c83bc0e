import { SlawError, invalid } from '../../errors.js'
import type { BillingType, CostEntry, CostEventStatus, CostEvent, CostTotals, NewCostEvent, Period, RollupKey } from '../../contracts/governance.js'
import type { StorageSession } from '../../contracts/storage.js'
import type { Agent, Issue, Project } from '../../records.js'
import type { Actor } from '../foundation/actor.js'
import type { BudgetService, CostImpact } from './budgets.js'
import type { ServiceContext } from '../foundation/context.js'
import { costEventFact } from '../governance/governance-outbox.js'
import { GroupCommit } from '../foundation/group-commit.js'
import { isUuid, uuidv7 } from '../foundation/ids.js'
import type { IssueService } from '../work/issues.js'
import { lifetime, monthPeriod, monthStart, nextMonthStart, providerForModel, utcDay, zeroTotals } from './periods-and-models.js'
import { activityRows } from '../audit/activity-recorder.js'
import type { SquadService } from '../org/squads.js'
import { inSquad } from '../foundation/same-squad.js'

export interface RecordCostInput {
  agentId: string
  model: string
  inputTokens: number
  outputTokens: number
  costCents: number
  cachedInputTokens?: number
  cacheWriteTokens?: number
  /** Default `reported`. An `unpriced` event's costCents must be 0: the price is unknown, its tokens count apart. */
  costStatus?: CostEventStatus
  billingCode?: string | null
  issueId?: string | null
  provider?: string
  biller?: string | null
  billingType?: BillingType
}

interface Report {
  actor: Actor
  squadId: string
  input: RecordCostInput
}

interface Prepared {
  entry: CostEntry
  impact: Omit<CostImpact, 'tokenLimits' | 'totals'>
}

/**
 * The rows a batch of reports reads, each read once however many reports name it: a batch of one
 * agent's events reads its squad and agent once, not once per event.
 */
class BatchReads {
  private readonly memo = new Map<string, Promise<unknown>>()
  /** `locking`: inside a transaction, the squad row is share-locked; outside one a lock would end with its statement. */
  constructor(
    private readonly tx: StorageSession,
    private readonly locking = true,
  ) {}
  private once<T>(key: string, read: () => Promise<T>): Promise<T> {
    let p = this.memo.get(key) as Promise<T> | undefined
    if (!p) this.memo.set(key, (p = read()))
    return p
  }
  // The squad row is share-locked: a racing archive waits for the batch (issue 9).
  squad = (id: string) => this.once(`s${id}`, () => this.tx.squads.get(id, this.locking ? { lock: 'share' } : {}))
  agent = (id: string) => this.once(`a${id}`, () => this.tx.agents.get(id))
  issue = (id: string) => this.once(`i${id}`, () => this.tx.issues.get(id))
  project = (id: string) => this.once(`p${id}`, () => this.tx.projects.get(id))
}

function checkModel(input: RecordCostInput): void {
  if (!input.model.trim()) throw invalid('/model', 'model must not be blank')
  // An unpriced event says nobody knows its cost: cents beside it would be a made-up number.
  if (input.costStatus === 'unpriced' && input.costCents !== 0) throw invalid('/costCents', 'an unpriced cost event has costCents 0 (its tokens are counted as unpriced)')
}

export interface CostSummary extends CostTotals {
  totalCents: number
  period: 'mtd'
  month: Period
  periodStart: Date
  periodEnd: Date
}

export interface AgentCostRow extends CostTotals {
  agentId: string
  /** null when the agent was deleted after it spent. */
  name: string | null
}

export interface SpendWindow extends CostTotals {
  window: string
  hours: number
  startsAt: Date
  endsAt: Date
  providers: Array<{ provider: string } & CostTotals>
}

export interface DayCostRow extends CostTotals {
  /** A UTC day, `YYYY-MM-DD`. */
  day: string
}

export interface ModelCostRow extends CostTotals {
  provider: string
  model: string
  billingType: BillingType
}

/** A month a breakdown covers: the whole UTC month, as the rollups count it. */
export interface MonthBreakdown {
  month: Period
  periodStart: Date
  periodEnd: Date
}

const monthPattern = /^[1-9][0-9]{3}-(0[1-9]|1[0-2])$/

/** The rolling windows of window-spend (docs/costs-and-budgets.md). */
const spendWindows = [
  { window: '5h', hours: 5 },
  { window: '24h', hours: 24 },
  { window: '7d', hours: 24 * 7 },
] as const

/**
 * Cost events in integer cents and tokens, attributed to squad, agent, issue (when given) and the
 * issue's project; every read is a rollup lookup or an index range scan.
 */
export class CostService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
    private readonly issues: IssueService,
    private readonly budgets: BudgetService,
  ) {}

  /** Concurrent standalone reports (the HTTP route) share transactions: see GroupCommit. */
  private readonly batch = new GroupCommit<Report, CostEvent>(
    (items) => this.recordBatch(items),
    (item) => this.record(item.actor, item.squadId, item.input),
    64,
    2,
  )

  /**
   * Records a cost event in its own transaction, committed together with other events reported at
   * the same moment (group commit). For a caller that has no transaction of its own; inside one,
   * use `record`, which joins it.
   */
  async report(actor: Actor, squadId: string, input: RecordCostInput): Promise<CostEvent> {
    checkModel(input)
    return this.batch.submit({ actor, squadId, input })
  }

  /** Records a cost event; inside a caller's transaction it joins that transaction. */
  async record(actor: Actor, squadId: string, input: RecordCostInput): Promise<CostEvent> {
    checkModel(input)
    return this.ctx.storage.transaction(async (tx) => {
      const prepared = await this.prepare(new BatchReads(tx), actor, squadId, input)
      const [recorded] = await tx.costs.recordMany([prepared.entry])
      await this.budgets.afterCost(tx, { ...prepared.impact, tokenLimits: recorded!.tokenLimits, totals: recorded!.totals })
      return recorded!.event
    })
  }

  /** A batch of concurrent reports: without budgets in one statement, else in one transaction. */
  private async recordBatch(items: Report[]): Promise<Array<PromiseSettledResult<CostEvent>>> {
    return (await this.recordUnbudgeted(items)) ?? this.recordInTransaction(items)
  }

  /**
   * Reports for squads, agents and projects that have no budget (most of them) need no budget step
   * after the write, so they need no transaction: the reads go to the pool, pipelined, and the write
   * is one statement that commits by itself, with the squads' unarchived and unbudgeted state
   * checked again under share locks (`CostRepository.recordUnbudgeted`). Two round trips instead of
   * four (one when no report names an issue), and no rollup row stays locked across a round trip,
   * which is what concurrent reports of one squad queue on. Null when a budget or an archive is in
   * the way (or the storage has no such statement): the caller takes the transactional path.
   */
  private async recordUnbudgeted(items: Report[]): Promise<Array<PromiseSettledResult<CostEvent>> | null> {
    const costs = this.ctx.storage.costs
    if (!costs.recordUnbudgeted) return null
    // Reports that name no issue need no reads at all: the statement checks what they would. When it
    // refuses, the transactional path reads once and answers; reading here to try again would not.
    const unread = items.map((it) => this.unread(it.actor, it.squadId, it.input))
    if (unread.every((e) => e !== undefined)) {
      const recorded = await costs.recordUnbudgeted(unread as CostEntry[])
      return recorded && recorded.map((r) => ({ status: 'fulfilled' as const, value: r.event }))
    }
    const reads = new BatchReads(this.ctx.storage, false)
    const prepared = await Promise.allSettled(items.map((it) => this.prepare(reads, it.actor, it.squadId, it.input)))
    const ok = prepared.flatMap((p) => (p.status === 'fulfilled' ? [p.value] : []))
    const budgeted = ({ impact: { squad, agent, project } }: Prepared) => squad.budgetMonthlyCents !== null || agent.budgetMonthlyCents !== null || (project !== null && project.budgetCents !== null)
    if (ok.some(budgeted)) return null
    const recorded = ok.length ? await costs.recordUnbudgeted(ok.map((p) => p.entry)) : []
    if (!recorded) return null
    const events = new Map(ok.map((p, i) => [p, recorded[i]!.event]))
    return prepared.map((p) => (p.status === 'fulfilled' ? { status: 'fulfilled' as const, value: events.get(p.value)! } : p))
  }

  /** One transaction for a batch of reports: reads pipelined, one write, budgets event by event. */
  private async recordInTransaction(items: Report[]): Promise<Array<PromiseSettledResult<CostEvent>>> {
    return this.ctx.storage.transaction(async (tx) => {
      const reads = new BatchReads(tx)
      const prepared = await Promise.allSettled(items.map((it) => this.prepare(reads, it.actor, it.squadId, it.input)))
      const ok = prepared.flatMap((p) => (p.status === 'fulfilled' ? [p.value] : []))
      const recorded = await tx.costs.recordMany(ok.map((p) => p.entry))
      // Budgets see each event in order, with the agent and project as the previous event left them.
      const agents = new Map<string, Agent>()
      const projects = new Map<string, Project>()
      const events = new Map<Prepared, CostEvent>()
      for (const [i, p] of ok.entries()) {
        const r = recorded[i]!
        const agent = agents.get(p.impact.agent.id) ?? p.impact.agent
        const project = p.impact.project ? (projects.get(p.impact.project.id) ?? p.impact.project) : null
        const after = await this.budgets.afterCost(tx, { ...p.impact, agent, project, tokenLimits: r.tokenLimits, totals: r.totals })
        agents.set(after.agent.id, after.agent)
        if (after.project) projects.set(after.project.id, after.project)
        events.set(p, r.event)
      }
      return prepared.map((p) => (p.status === 'fulfilled' ? { status: 'fulfilled' as const, value: events.get(p.value)! } : p))
    })
  }

  /** Checks one report against the squad, agent and issue, and builds every row it writes. */
  private async prepare(reads: BatchReads, actor: Actor, squadId: string, input: RecordCostInput): Promise<Prepared> {
    // Costs are facts already incurred: they are recorded for paused or terminated agents too, but
    // not for an archived squad (issue 9): its row is share-locked so a racing archive waits.
    // Pipelined reads; the squad's visibility still decides first (another squad's key: 404).
    const [squad, named, found] = await Promise.all([
      this.squads.writableRow(actor, squadId, () => reads.squad(squadId)),
      isUuid(input.agentId) ? reads.agent(input.agentId) : undefined,
      input.issueId && isUuid(input.issueId) ? reads.issue(input.issueId) : undefined,
    ])
    if (actor.type === 'agent' && actor.agentId !== input.agentId) throw new SlawError('forbidden', 'An agent reports its own costs only.')
    const agent = inSquad(named, squad.id, '/agentId', 'agentId must be an agent of this squad')
    let issue: Issue | undefined
    let project: Project | null = null
    if (input.issueId) {
      issue = inSquad(found, squad.id, '/issueId', 'issueId must be an issue of this squad')
      if (issue.projectId) project = (await reads.project(issue.projectId)) ?? null
    }
    const { entry, period, delta } = this.entry(actor, squad.id, agent.id, issue, project, input)
    return { entry, impact: { squad, agent, project, period, delta } }
  }

  /**
   * A report that names no issue, checked without reading anything: the statement that writes it
   * (`recordUnbudgeted`) finds the squad unarchived and the agent in it, or writes nothing, and the
   * transactional path then reads and answers the precise error. Undefined when the report needs
   * reads (an issue to attribute, an id that is not a UUID) or is refused outright.
   */
  private unread(actor: Actor, squadId: string, input: RecordCostInput): CostEntry | undefined {
    if (input.issueId || !isUuid(squadId) || !isUuid(input.agentId)) return undefined
    if (actor.type === 'agent' && (actor.squadId !== squadId || actor.agentId !== input.agentId)) return undefined
    return this.entry(actor, squadId, input.agentId, undefined, null, input).entry
  }

  /** Every row one report writes: the event, its rollup keys and delta, its activity entry and fact. */
  private entry(actor: Actor, squadId: string, agentId: string, issue: Issue | undefined, project: Project | null, input: RecordCostInput): { entry: CostEntry; period: Period; delta: CostTotals } {
    const model = input.model.trim()
    const occurredAt = this.ctx.now()
    const period = monthPeriod(occurredAt)
    const billingType = input.billingType ?? 'metered_api'
    const costStatus = input.costStatus ?? 'reported'
    const event: NewCostEvent = {
      id: uuidv7(occurredAt.getTime()),
      squadId,
      agentId,
      issueId: issue?.id ?? null,
      projectId: project?.id ?? null,
      provider: input.provider?.toLowerCase() ?? providerForModel(model),
      biller: input.biller?.toLowerCase() ?? null,
      billingType,
      model,
      inputTokens: input.inputTokens,
      cachedInputTokens: input.cachedInputTokens ?? 0,
      cacheWriteTokens: input.cacheWriteTokens ?? 0,
      outputTokens: input.outputTokens,
      costCents: costStatus === 'unpriced' ? 0 : input.costCents,
      costStatus,
      billingCode: input.billingCode ?? issue?.billingCode ?? null,
      occurredAt,
    }
    // The activity entry (tower action cost.reported) and the cost_event fact are written by the
    // same statement as the event and its rollups.
    const audit = activityRows(
      actor,
      {
        squadId,
        action: 'cost.recorded',
        entityType: 'cost_event',
        entityId: event.id,
        agentId,
        details: {
          model: event.model,
          provider: event.provider,
          billingType: event.billingType,
          costCents: event.costCents,
          costStatus: event.costStatus,
          inputTokens: event.inputTokens,
          cachedInputTokens: event.cachedInputTokens,
          outputTokens: event.outputTokens,
          ...(issue ? { issueId: issue.id, identifier: issue.identifier } : {}),
        },
        outbox: [costEventFact({ ...event, createdAt: occurredAt })],
      },
      occurredAt,
    )
    const delta: CostTotals = {
      costCents: event.costCents,
      inputTokens: event.inputTokens,
      cachedInputTokens: event.cachedInputTokens,
      outputTokens: event.outputTokens,
      // Token ceilings count subscription tokens and tokens nobody priced (spend cents cannot see).
      subscriptionTokens: billingType === 'metered_api' && costStatus !== 'unpriced' ? 0 : event.inputTokens + event.cachedInputTokens + event.outputTokens,
      events: 1,
      cacheWriteTokens: event.cacheWriteTokens,
      unpricedTokens: costStatus === 'unpriced' ? event.inputTokens + event.cachedInputTokens + event.cacheWriteTokens + event.outputTokens : 0,
    }
    // The squad's row first, so writers of one squad queue there before touching any other row.
    const keys: RollupKey[] = [
      { scope: 'squad', key: '', period },
      { scope: 'agent', key: agentId, period },
      ...(project ? [{ scope: 'project' as const, key: project.id, period: lifetime }] : []),
      { scope: 'provider', key: event.provider, period },
    ]
    return { entry: { event, keys, delta, activity: [audit.entry], outbox: audit.outbox }, period, delta }
  }

  async summary(actor: Actor, squadId: string): Promise<CostSummary> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    const now = this.ctx.now()
    const month = monthPeriod(now)
    const { key: _key, ...totals } = (await this.ctx.storage.costs.rollups(squadId, month, 'squad', ['']))[0] ?? { key: '', ...zeroTotals() }
    return { ...totals, totalCents: totals.costCents, period: 'mtd', month, periodStart: monthStart(now), periodEnd: nextMonthStart(now) }
  }

  async byAgent(actor: Actor, squadId: string): Promise<{ month: Period; agents: AgentCostRow[] }> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    const month = monthPeriod(this.ctx.now())
    const [rows, agents] = await Promise.all([this.ctx.storage.costs.rollups(squadId, month, 'agent'), this.ctx.storage.agents.list(squadId)])
    const names = new Map(agents.map((a) => [a.id, a.name]))
    return {
      month,
      agents: rows.map(({ key, ...t }) => ({ agentId: key, name: names.get(key) ?? null, ...t })).sort((a, b) => b.costCents - a.costCents || a.agentId.localeCompare(b.agentId)),
    }
  }

  async byProvider(actor: Actor, squadId: string): Promise<{ month: Period; providers: Array<{ provider: string } & CostTotals> }> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    const month = monthPeriod(this.ctx.now())
    const rows = await this.ctx.storage.costs.rollups(squadId, month, 'provider')
    return {
      month,
      providers: rows.map(({ key, ...t }) => ({ provider: key, ...t })).sort((a, b) => b.costCents - a.costCents || a.provider.localeCompare(b.provider)),
    }
  }

  async windowSpend(actor: Actor, squadId: string): Promise<{ windows: SpendWindow[] }> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    const now = this.ctx.now()
    const starts = spendWindows.map((w) => new Date(now.getTime() - w.hours * 3_600_000))
    const rows = await this.ctx.storage.costs.windowSpend(squadId, starts, now)
    return {
      windows: spendWindows.map((w, i) => {
        const providers = rows.map((r) => ({ provider: r.provider, ...r.windows[i]! })).filter((p) => p.events > 0)
        const total = zeroTotals()
        for (const p of providers) for (const k of Object.keys(total) as Array<keyof CostTotals>) total[k] += p[k]
        return { window: w.window, hours: w.hours, startsAt: starts[i]!, endsAt: now, ...total, providers: providers.sort((a, b) => b.costCents - a.costCents || a.provider.localeCompare(b.provider)) }
      }),
    }
  }

  /**
   * The squad's spend per UTC day of a month (default: the current one): every day from the 1st to
   * the month's last, or to today for the current month, days without events at zero.
   */
  async byDay(actor: Actor, squadId: string, month?: string): Promise<MonthBreakdown & { days: DayCostRow[] }> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    const now = this.ctx.now()
    const period = this.month(month, now)
    const until = new Date(Math.min(period.periodEnd.getTime(), now.getTime() + 1))
    const found = new Map((await this.ctx.storage.costs.dailyTotals(squadId, period.periodStart, period.periodEnd)).map(({ day, ...t }) => [day, t]))
    const days: DayCostRow[] = []
    for (let d = period.periodStart; d < until; d = new Date(d.getTime() + 86_400_000)) days.push({ day: utcDay(d), ...(found.get(utcDay(d)) ?? zeroTotals()) })
    return { ...period, days }
  }

  /** The squad's spend of a month (default: the current one) per provider, model and billing type, biggest first. */
  async byModel(actor: Actor, squadId: string, month?: string): Promise<MonthBreakdown & { models: ModelCostRow[] }> {
    await this.squads.visible(this.ctx.storage, actor, squadId)
    const period = this.month(month, this.ctx.now())
    const rows = await this.ctx.storage.costs.modelTotals(squadId, period.periodStart, period.periodEnd)
    const tokens = (r: CostTotals) => r.inputTokens + r.cachedInputTokens + r.cacheWriteTokens + r.outputTokens
    const byName = (a: ModelCostRow, b: ModelCostRow) => a.provider.localeCompare(b.provider) || a.model.localeCompare(b.model) || a.billingType.localeCompare(b.billingType)
    return { ...period, models: rows.sort((a, b) => b.costCents - a.costCents || tokens(b) - tokens(a) || byName(a, b)) }
  }

  /** `YYYY-MM` (checked here too, for library callers) or the month of `now`. */
  private month(month: string | undefined, now: Date): MonthBreakdown {
    if (month !== undefined && !monthPattern.test(month)) throw invalid('/month', 'month must be a UTC month, YYYY-MM')
    const at = month === undefined ? now : new Date(`${month}-01T00:00:00.000Z`)
    return { month: monthPeriod(at), periodStart: monthStart(at), periodEnd: nextMonthStart(at) }
  }

  /** Lifetime spend of one issue (every run that worked on it). */
  async issueSummary(actor: Actor, idOrIdentifier: string): Promise<{ issueId: string; identifier: string } & CostTotals> {
    const issue = await this.issues.visible(this.ctx.storage, actor, idOrIdentifier, { identifier: true })
    return { issueId: issue.id, identifier: issue.identifier, ...(await this.ctx.storage.costs.issueTotals(issue.id)) }
  }
}
