import { SlawError, notFound } from '../../errors.js'
import type { StorageSession } from '../../contracts/storage.js'
import type { Agent, Issue, IssueStatus, Squad } from '../../records.js'
import type { Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { GroupCommit } from '../foundation/group-commit.js'
import { isUuid } from '../foundation/ids.js'
import { outboxUpserts, recordActivities, recordActivity } from '../audit/activity-recorder.js'
import type { SquadService } from '../org/squads.js'

/**
 * Atomic checkout and release of issues: the per-issue lock, the guards other areas plug in
 * (project pause, budgets, fleet limits), group commit of concurrent checkouts, and the
 * conditional update that is the final guard. `IssueService` exposes it (`checkout`,
 * `submitCheckout`, `release`, `addCheckoutGuard`).
 */

/** Statuses a checkout accepts when the caller gives no `expectedStatuses` (docs/issues.md). */
const defaultCheckoutStatuses: IssueStatus[] = ['todo', 'backlog', 'blocked', 'in_review']
const checkoutLockTtlMs = 10_000

export interface CheckoutInput {
  agentId: string
  expectedStatuses?: IssueStatus[]
}

interface CheckoutItem {
  actor: Actor
  id: string
  input: CheckoutInput
}

/**
 * A check run inside the checkout lock and transaction, before the conditional update: project
 * pause, budgets and fleet limits plug in here. Throw a SlawError to refuse the checkout.
 */
export type CheckoutGuard = (tx: StorageSession, input: { issue: Issue; agent: Agent; squad: Squad }) => Promise<void>

/** What the checkout needs of the issue service: which issues an actor may see and write. */
export interface IssueAccess {
  visible(session: StorageSession, actor: Actor, id: string): Promise<Issue>
  writable(tx: StorageSession, actor: Actor, id: string, opts: { anyAgentOfSquad?: boolean }): Promise<{ issue: Issue; squad: Squad }>
}

export class IssueCheckout {
  private readonly guards: CheckoutGuard[] = [projectPauseGuard]

  constructor(
    private readonly ctx: ServiceContext,
    private readonly squads: SquadService,
    private readonly issues: IssueAccess,
  ) {}

  addGuard(guard: CheckoutGuard): void {
    this.guards.push(guard)
  }

  /**
   * Runs every checkout guard (project pause, budgets, tower limit) for work the agent is about to
   * do: the run engine's gates before a run starts. A run without an issue has no project.
   */
  async checkGuards(tx: StorageSession, input: { issue: Issue | null; agent: Agent; squad: Squad }): Promise<void> {
    // Guards read only the issue's project; an issue-less run is checked as work outside any project.
    const issue = input.issue ?? ({ projectId: null } as Issue)
    for (const guard of this.guards) await guard(tx, { issue, agent: input.agent, squad: input.squad })
  }

  /**
   * Atomic checkout. The lock serialises the decision (ownership, status, pause, budgets) across
   * nodes; the conditional update in storage is the final guard, so even an expired lock cannot
   * produce two owners. Inside a caller's transaction it joins that transaction; a caller without
   * one (the HTTP route) uses `submit`.
   */
  checkout(actor: Actor, id: string, input: CheckoutInput): Promise<Issue> {
    return this.withCheckoutLock(actor, id, input, () => this.checkoutOne({ actor, id, input }))
  }

  /**
   * `checkout` for a caller without a transaction of its own (the HTTP route): checkouts of distinct
   * issues submitted at the same moment share one transaction (group commit), each still under its
   * own issue's lock, so N concurrent checkouts cost a handful of round trips instead of 5 × N. One
   * checkout's refusal never fails the others; a batch that fails as a whole is retried one by one.
   */
  async submit(actor: Actor, id: string, input: CheckoutInput): Promise<Issue> {
    const key = id.toLowerCase()
    // Agents racing for an issue another checkout on this node is deciding wait for its outcome
    // outside the lock, then learn it from the row all at once (one read each, in parallel), instead
    // of taking the lock one after another to read the same answer.
    if (actor.type === 'agent' && actor.agentId === input.agentId && isUuid(id)) {
      const deciding = this.deciding.get(key)
      if (deciding) await deciding
      if (this.holders.get(key) !== undefined) await this.refuseKnownHolder(actor, id, input)
    }
    // From here to `deciding.set` nothing awaits: a contender arriving after this call sees it.
    const decided = this.withCheckoutLock(actor, id, input, async () => {
      await this.refuseKnownHolder(actor, id, input)
      try {
        const issue = await this.checkoutBatch.submit({ actor, id, input })
        if (issue.checkoutAgentId) this.holders.set(issue.id, issue.checkoutAgentId)
        return issue
      } catch (err) {
        // Learned that someone else holds it: the next contender on this node pays one read.
        if (err instanceof SlawError && err.code === 'issue_checked_out') this.holders.set(key, otherHolder)
        throw err
      }
    })
    const settled = decided.then(
      () => undefined,
      () => undefined,
    )
    this.deciding.set(key, settled)
    try {
      return await decided
    } finally {
      if (this.deciding.get(key) === settled) this.deciding.delete(key)
    }
  }

  /** Per issue, the checkout this node is deciding now (settles, never rejects); gone once decided. */
  private readonly deciding = new Map<string, Promise<void>>()

  /**
   * Who this node last saw holding an issue's checkout (bounded, oldest forgotten first). Only a
   * hint: a contender whose issue it names as someone else's pays one plain read instead of a
   * transaction, and the read decides. Fifty agents racing for one issue thus cost one checkout
   * and 49 reads, not 50 transactions.
   */
  private readonly holders = new HolderHints(10_000)

  /**
   * Refuses a checkout of an issue another agent holds with one read, when the hint says so. The
   * committed row decides, so this needs no lock: an issue it shows held by another agent is
   * refused as the locked path would refuse it.
   */
  private async refuseKnownHolder(actor: Actor, id: string, input: CheckoutInput): Promise<void> {
    // Agents only: an Operator's checkout names any agent, and its checks (the agent exists, is in
    // the squad) come first on the full path.
    if (actor.type !== 'agent') return
    const key = id.toLowerCase()
    const hint = this.holders.get(key)
    if (hint === undefined || hint === input.agentId) return
    const row = await this.ctx.storage.issues.get(key)
    if (row && row.squadId === actor.squadId && row.checkoutAgentId && row.checkoutAgentId !== input.agentId) throw new SlawError('issue_checked_out')
    this.holders.delete(key)
  }

  private readonly checkoutBatch = new GroupCommit<CheckoutItem, Issue>(
    (items) => this.ctx.storage.transaction((tx) => this.checkoutIn(tx, items)),
    // Alone: the submitter holds the issue's lock already.
    (item) => this.checkoutOne(item),
    64,
    2,
  )

  /** One checkout, its issue's lock held by the caller: joins an open transaction or opens one. */
  private checkoutOne(item: CheckoutItem): Promise<Issue> {
    return this.ctx.storage.transaction(async (tx) => {
      const [result] = await this.checkoutIn(tx, [item])
      if (result!.status === 'rejected') throw result!.reason
      return result!.value
    })
  }

  /** The checks that need no database, then `fn` under the issue's checkout lock. */
  private withCheckoutLock<T>(actor: Actor, id: string, input: CheckoutInput, fn: () => Promise<T>): Promise<T> {
    if (actor.type === 'agent' && actor.agentId !== input.agentId) return Promise.reject(new SlawError('forbidden', 'An agent checks issues out for itself only.'))
    // A malformed id costs no lock round trip; everything else is decided under the lock.
    if (!isUuid(id)) return Promise.reject(notFound('Issue'))
    return this.ctx.locks.withLock(`slaw:checkout:${id.toLowerCase()}`, checkoutLockTtlMs, fn)
  }

  /**
   * Checkouts of distinct issues inside `tx`, each holding its issue's lock: one settled result per
   * item, in order. Every step runs for all items at once (one round trip each): the reads, the
   * guards, the conditional updates, then one statement for every activity entry and outbox row. A
   * refusal is that item's answer and writes nothing of it; a database error fails the whole call.
   */
  private async checkoutIn(tx: StorageSession, items: CheckoutItem[]): Promise<Array<PromiseSettledResult<Issue>>> {
    // Reads: each issue, its squad and the agent, pipelined.
    const read = await Promise.allSettled(
      items.map(async ({ actor, id, input }) => {
        const squadRow = tx.squads.getOfIssue(id)
        const [issue, agent] = await Promise.all([this.issues.visible(tx, actor, id), isUuid(input.agentId) ? tx.agents.get(input.agentId) : undefined, squadRow.catch(() => undefined)])
        const squad = await this.squads.writableRow(actor, issue.squadId, async () => {
          const row = await squadRow
          return row?.id === issue.squadId ? row : tx.squads.get(issue.squadId)
        })
        if (!agent || agent.squadId !== issue.squadId) throw notFound('Agent')
        if (!canTakeWork(agent)) throw new SlawError('agent_not_active', `The agent is ${agent.status}; it cannot check out work.`)
        if (issue.checkoutAgentId && issue.checkoutAgentId !== agent.id) throw new SlawError('issue_checked_out')
        const again = issue.checkoutAgentId === agent.id && issue.status === 'in_progress'
        const allowed = input.expectedStatuses?.length ? input.expectedStatuses : defaultCheckoutStatuses
        if (!again && !allowed.includes(issue.status)) {
          throw new SlawError('invalid_state', `The issue is ${issue.status}; checkout expects one of: ${allowed.join(', ')}.`)
        }
        return { issue, agent, squad, allowed, again }
      }),
    )
    // Guards (project pause, budgets, fleet limit): all of an item's at once; the first refusal in
    // registration order wins. A checkout already held by its agent is answered as it is.
    const guarded = await thenEach(read, async (c) => {
      if (c.again) return c
      const verdicts = await Promise.allSettled(this.guards.map((guard) => guard(tx, c)))
      const refused = verdicts.find((v): v is PromiseRejectedResult => v.status === 'rejected')
      if (refused) throw refused.reason
      return c
    })
    // The conditional updates: only while nobody else holds the issue and its status is still allowed.
    const updated = await thenEach(
      guarded,
      async (c) => {
        if (c.again) return { ...c, updated: undefined }
        const row = await tx.issues.checkout({ id: c.issue.id, agentId: c.agent.id, allowedStatuses: c.allowed })
        if (row) return { ...c, updated: row }
        // The conditional update lost to a write that slipped past the lock: say which condition failed.
        const now = await tx.issues.get(c.issue.id)
        if (now?.checkoutAgentId && now.checkoutAgentId !== c.agent.id) throw new SlawError('issue_checked_out')
        throw new SlawError('invalid_state', `The issue is ${now?.status ?? 'gone'}; checkout expects one of: ${c.allowed.join(', ')}.`)
      },
      counterLockOrder(guarded),
    )
    // A database error aborted the transaction under every item: fail the call (a batch is then
    // retried item by item) rather than answer items whose writes will not commit.
    const failed = updated.find((r): r is PromiseRejectedResult => r.status === 'rejected' && !(r.reason instanceof SlawError))
    if (failed) throw failed.reason
    const written = updated.flatMap((r, i) => (r.status === 'fulfilled' && r.value.updated ? [{ item: items[i]!, c: r.value, issue: r.value.updated }] : []))
    if (written.length) {
      await recordActivities(
        tx,
        written.map(({ item, c, issue }) => ({
          actor: item.actor,
          input: {
            squadId: issue.squadId,
            action: 'issue.checked_out',
            entityType: 'issue',
            entityId: issue.id,
            agentId: c.agent.id,
            details: { identifier: c.issue.identifier, from: c.issue.status },
            outbox: [outboxUpserts.issue(issue)],
          },
        })),
      )
    }
    return updated.map((r) => (r.status === 'rejected' ? r : { status: 'fulfilled', value: r.value.updated ?? r.value.issue }))
  }

  async release(actor: Actor, id: string): Promise<Issue> {
    return this.ctx.storage.transaction(async (tx) => {
      const { issue, squad } = await this.issues.writable(tx, actor, id, { anyAgentOfSquad: true })
      if (!issue.checkoutAgentId) return issue
      const holder = actor.type === 'agent' ? actor.agentId : null
      // Only the holder (or an Operator) lets go of a checkout: the scope rule of docs/authorization.md.
      const notHolder = () => new SlawError('forbidden', 'Only the agent holding the checkout, or an Operator, may release it.')
      if (holder && issue.checkoutAgentId !== holder) throw notHolder()
      const released = await tx.issues.release(issue.id, holder)
      if (!released) throw notHolder()
      this.holders.delete(issue.id)
      await recordActivity(tx, actor, {
        squadId: squad.id,
        action: 'issue.released',
        entityType: 'issue',
        entityId: issue.id,
        agentId: issue.checkoutAgentId,
        details: { identifier: issue.identifier },
        outbox: [outboxUpserts.issue(released)],
      })
      return released
    })
  }
}

/**
 * Paused and terminated agents take no work (409 agent_not_active). `running` and `error` are
 * operational states of an active agent (a heartbeat in flight, a failed last run): it may check out.
 */
function canTakeWork(agent: Agent): boolean {
  return agent.status !== 'paused' && agent.status !== 'terminated'
}

/** A paused project takes no checkouts (409 project_paused). */
const projectPauseGuard: CheckoutGuard = async (tx, { issue }) => {
  if (!issue.projectId) return
  // Share-locked until commit: a pause (an UPDATE of the row) waits for this checkout, and a
  // checkout that waited for a pause sees it. pausedAt outlives a pause; pauseReason is the state.
  const project = await tx.projects.get(issue.projectId, { forShare: true })
  if (project?.pauseReason) throw new SlawError('project_paused')
}

/**
 * The next step of a batch: `fn` on each item not refused yet, all at once (started in `order`,
 * by index; the answers stay in item order); a refusal carries over.
 */
function thenEach<T, U>(results: Array<PromiseSettledResult<T>>, fn: (value: T) => Promise<U>, order: number[] = results.map((_, i) => i)): Promise<Array<PromiseSettledResult<U>>> {
  const out: Array<Promise<PromiseSettledResult<U>> | PromiseRejectedResult> = new Array(results.length)
  for (const i of order) {
    const r = results[i]!
    out[i] =
      r.status === 'rejected'
        ? r
        : fn(r.value).then(
            (value) => ({ status: 'fulfilled', value }),
            (reason: unknown) => ({ status: 'rejected', reason }),
          )
  }
  return Promise.all(out)
}

/**
 * The order a batch updates its issues in: by squad, by the id's status-counter shard (the last
 * byte mod 16, as the `issue_status_counts` trigger picks it), then by status. Each update's trigger
 * locks its shard's counter rows until commit; two batches that took them in opposite orders would
 * deadlock (PostgreSQL then fails one after a second, and its checkouts are retried one by one).
 */
function counterLockOrder(results: Array<PromiseSettledResult<{ issue: Issue }>>): number[] {
  const keys = results.map((r) => {
    if (r.status === 'rejected') return ''
    const { squadId, id, status } = r.value.issue
    return `${squadId} ${String(Number.parseInt(id.slice(-2), 16) % 16).padStart(2, '0')} ${status}`
  })
  return keys.map((_, i) => i).sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : a - b))
}

/** Stands for "an agent other than the caller" in the holder hints, when a refusal named none. */
const otherHolder = '*'

/** A map that keeps at most `max` entries, forgetting the oldest first (insertion order). */
class HolderHints {
  private readonly map = new Map<string, string>()
  constructor(private readonly max: number) {}
  get(id: string): string | undefined {
    return this.map.get(id)
  }
  set(id: string, holder: string): void {
    this.map.delete(id)
    this.map.set(id, holder)
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value!)
  }
  delete(id: string): void {
    this.map.delete(id)
  }
}
