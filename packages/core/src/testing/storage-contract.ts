import type { FeedEvent, Storage } from '../contracts/storage.js'
import type { CostTotals } from '../contracts/governance.js'
import type { OutboxEntry } from '../records/activity.js'
import { UniqueViolation, compareEventCursors, isEventCursor } from '../contracts/storage.js'
import { uuidv7 } from '../services/foundation/ids.js'
import type { ContractTest } from './contract-test.js'

export interface StorageContractOptions {
  /** Skip the whole kit with this reason (e.g. a server that is not configured here). */
  skip?: string | false
}

/** What a kit run needs from the author: a fresh, empty storage, and how to dispose of it. */
export type MakeStorage = () => Promise<{ storage: Storage; dispose?: () => Promise<void> }>

/**
 * The contract every Storage implementation must keep: transactions that roll back whole,
 * nested transactions that join, stable unique-violation names, an atomic issue counter, a
 * conditional checkout with one winner, an outbox read in order, jobs claimed once, and routine
 * runs unique per (trigger, due time) and idempotency key with due schedules claimed once.
 *
 * @example
 * ```ts
 * import t from 'tap'
 * import { storageContract } from '@slaw/core/testing'
 * storageContract(t, async () => ({ storage: myStorage(), dispose: () => dropDatabase() }))
 * ```
 */
export function storageContract(t: ContractTest, make: MakeStorage, options: StorageContractOptions = {}): void {
  const kit = (name: string, fn: (t: ContractTest, s: Storage) => Promise<void>) =>
    t.test(`storage contract: ${name}`, { skip: options.skip ?? false }, async (t) => {
      const { storage, dispose } = await make()
      t.teardown(async () => {
        await storage.close()
        await dispose?.()
      })
      await storage.migrate()
      await fn(t, storage)
    })

  const squad = async (s: Storage, slug = `s-${uuidv7().slice(-12)}`) =>
    s.squads.insert({
      id: uuidv7(),
      name: slug,
      slug,
      issuePrefix:
        slug
          .replace(/[^a-z]/g, '')
          .slice(0, 4)
          .toUpperCase() +
        uuidv7()
          .slice(-4)
          .replace(/[^a-f]/g, 'x')
          .toUpperCase(),
    })
  const agent = async (s: Storage, squadId: string, name: string) =>
    s.agents.insert({ id: uuidv7(), squadId, name, role: 'general', title: null, adapterType: 'process', reportsToAgentId: null, prompt: null, desiredSkills: [] })
  const issue = async (s: Storage, squadId: string, n: number) =>
    s.issues.insert({
      id: uuidv7(),
      squadId,
      number: n,
      identifier: `T${uuidv7().slice(-6)}-${n}`,
      title: `issue ${n}`,
      description: null,
      status: 'todo',
      priority: 'medium',
      assigneeAgentId: null,
      assigneeUserId: null,
      parentId: null,
      goalId: null,
      projectId: null,
      billingCode: null,
    })

  kit('migrate is idempotent and safe to repeat', async (t, s) => {
    await s.migrate()
    await Promise.all([s.migrate(), s.migrate()])
    await s.ping()
    t.ok(true, 'migrated three more times')
  })

  kit('a throw rolls the whole transaction back; nested calls join it', async (t, s) => {
    const id = uuidv7()
    const failure = new Error('boom')
    let caught: unknown
    try {
      await s.transaction(async (tx) => {
        await tx.squads.insert({ id, name: 'rollback', slug: `rb-${id.slice(-8)}`, issuePrefix: `RB${id.slice(-2)}`.toUpperCase() })
        await s.transaction(async (inner) =>
          inner.activity.insert({ id: uuidv7(), squadId: id, actorType: 'system', actorId: 't', action: 'x', entityType: 'squad', entityId: id, agentId: null, runId: null, details: null }),
        )
        t.ok(await s.squads.get(id), 'visible inside the transaction through the storage itself')
        throw failure
      })
    } catch (err) {
      caught = err
    }
    t.equal(caught, failure, 'the error propagates')
    t.equal(await s.squads.get(id), undefined, 'the insert was rolled back')
    t.same(await s.activity.list({ squadId: id, limit: 10 }), [], 'the nested insert was rolled back too')
  })

  kit('unique constraints surface as UniqueViolation with stable names', async (t, s) => {
    const a = await squad(s)
    let err: unknown
    try {
      await s.squads.insert({ id: uuidv7(), name: 'dup', slug: a.slug, issuePrefix: 'ZZZZ' })
    } catch (e) {
      err = e
    }
    t.ok(err instanceof UniqueViolation, 'UniqueViolation')
    t.equal((err as UniqueViolation).constraint, 'squads_slug')
    await agent(s, a.id, 'bob')
    err = undefined
    try {
      await agent(s, a.id, 'bob')
    } catch (e) {
      err = e
    }
    t.equal((err as UniqueViolation).constraint, 'agents_squad_name')
  })

  kit('issue numbers are reserved atomically', async (t, s) => {
    const a = await squad(s)
    const numbers = await Promise.all(Array.from({ length: 20 }, () => s.transaction((tx) => tx.squads.nextIssueNumber(a.id))))
    t.same(
      [...numbers].sort((x, y) => x - y),
      Array.from({ length: 20 }, (_, i) => i + 1),
      'twenty distinct numbers 1..20',
    )
  })

  kit('insertNumbered numbers and inserts in one step; an archived squad gives no number', async (t, s) => {
    const a = await squad(s)
    const fields = {
      title: 'numbered',
      description: null,
      status: 'todo' as const,
      priority: 'high' as const,
      assigneeAgentId: null,
      assigneeUserId: null,
      parentId: null,
      goalId: null,
      projectId: null,
      billingCode: null,
    }
    const made = (
      await Promise.all(
        Array.from({ length: 5 }, () =>
          s.transaction((tx) =>
            tx.issues.insertNumbered([
              { id: uuidv7(), squadId: a.id, ...fields },
              { id: uuidv7(), squadId: a.id, ...fields },
            ]),
          ),
        ),
      )
    ).flat()
    t.same(
      made.map((i) => i!.number).sort((x, y) => x - y),
      Array.from({ length: 10 }, (_, i) => i + 1),
      'ten distinct numbers 1..10, two per statement',
    )
    const first = made.find((i) => i!.number === 1)!
    t.same([first.squadId, first.identifier, first.title, first.status, first.priority, first.checkoutAgentId], [a.id, `${a.issuePrefix}-1`, 'numbered', 'todo', 'high', null])
    t.ok(first.createdAt instanceof Date && first.updatedAt instanceof Date, 'timestamps come back as dates')
    t.same(await s.issues.get(first.id), first, 'the row reads back as returned')
    t.equal((await s.issues.list({ squadId: a.id, q: `${a.issuePrefix}-1`, limit: 10 })).map((x) => x.id).includes(first.id), true, 'the identifier is searchable')
    await s.squads.update(a.id, { status: 'archived' })
    const other = await squad(s)
    const mixed = await s.transaction((tx) =>
      tx.issues.insertNumbered([
        { id: uuidv7(), squadId: other.id, ...fields },
        { id: uuidv7(), squadId: a.id, ...fields },
        { id: uuidv7(), squadId: other.id, ...fields },
      ]),
    )
    t.same(
      mixed.map((i) => i?.identifier),
      [`${other.issuePrefix}-1`, undefined, `${other.issuePrefix}-2`],
      "in the order given; the archived squad's issue is undefined",
    )
    t.equal(await s.transaction((tx) => tx.squads.nextIssueNumber(a.id)), 11, 'and no number was taken')
  })

  kit('checkout is a conditional update with one winner', async (t, s) => {
    const a = await squad(s)
    const agents = await Promise.all(Array.from({ length: 8 }, (_, i) => agent(s, a.id, `agent-${i}`)))
    const i1 = await issue(s, a.id, 1)
    const results = await Promise.all(agents.map((ag) => s.transaction((tx) => tx.issues.checkout({ id: i1.id, agentId: ag.id, allowedStatuses: ['todo'] }))))
    const winners = results.filter(Boolean)
    t.equal(winners.length, 1, 'exactly one checkout applied')
    t.equal(winners[0]!.status, 'in_progress')
    t.equal(winners[0]!.checkoutAgentId, winners[0]!.assigneeAgentId)
    const again = await s.issues.checkout({ id: i1.id, agentId: winners[0]!.checkoutAgentId!, allowedStatuses: ['in_progress'] })
    t.ok(again, 'the holder may check out again')
    const wrongStatus = await s.issues.checkout({ id: (await issue(s, a.id, 2)).id, agentId: agents[0]!.id, allowedStatuses: ['backlog'] })
    t.equal(wrongStatus, undefined, 'refused when the status is not allowed')
    const released = await s.issues.release(i1.id, agents.find((x) => x.id !== winners[0]!.checkoutAgentId)!.id)
    t.equal(released, undefined, 'only the holder releases')
    t.equal((await s.issues.release(i1.id, winners[0]!.checkoutAgentId))?.checkoutAgentId, null)
    t.equal((await s.squads.getOfIssue(i1.id))?.id, a.id, "an issue's squad is found by the issue's id")
    t.equal(await s.squads.getOfIssue(uuidv7()), undefined, 'no squad for an unknown issue')
  })

  kit('the outbox is read in commit order and never shows rolled-back rows', async (t, s) => {
    const a = await squad(s)
    const row = (n: number) => ({ kind: 'fact' as const, entityType: 'test', entityId: String(n), squadId: a.id, payload: { n } })
    const start = await s.outbox.readAfter('0', 100_000)
    const cursor = start.length ? start[start.length - 1]!.seq : '0'
    await s.transaction(async (tx) => tx.outbox.append([row(1), row(2)]))
    try {
      await s.transaction(async (tx) => {
        await tx.outbox.append([row(99)])
        throw new Error('rollback')
      })
    } catch {
      // expected
    }
    await Promise.all([3, 4, 5].map((n) => s.transaction((tx) => tx.outbox.append([row(n)]))))
    const read = await outboxRowsOnce(s, cursor, 5)
    t.same(read.map((r) => r.payload.n).slice(0, 2), [1, 2], 'rows of one transaction stay together, in order')
    t.same(read.map((r) => r.payload.n).sort(), [1, 2, 3, 4, 5], 'every committed row, and no rolled-back one')
    const seqs = read.map((r) => BigInt(r.seq))
    t.ok(
      seqs.every((x, i) => i === 0 || x > seqs[i - 1]!),
      'sequence numbers increase',
    )
    t.same(await s.outbox.readAfter(read[read.length - 1]!.seq, 100), [], 'nothing after the last')
    t.equal(await s.outbox.countAfter(read[1]!.seq), 3)
  })

  kit('an activity entry and its outbox rows are written together, or not at all', async (t, s) => {
    const a = await squad(s)
    const entry = (action: string) => ({
      id: uuidv7(),
      squadId: a.id,
      actorType: 'system' as const,
      actorId: 't',
      action,
      entityType: 'squad',
      entityId: a.id,
      agentId: null,
      runId: null,
      details: { n: 1 },
      createdAt: new Date(),
    })
    const start = await s.outbox.readAfter('0', 100_000)
    const cursor = start.length ? start[start.length - 1]!.seq : '0'
    const kept = entry('contract.kept')
    await s.transaction((tx) => tx.activity.record([kept], [{ kind: 'fact', entityType: 'test', entityId: kept.id, squadId: a.id, payload: { kept: true } }]))
    await s.transaction((tx) => tx.activity.record([entry('contract.no_outbox')], []))
    try {
      await s.transaction(async (tx) => {
        await tx.activity.record([entry('contract.rolled_back')], [{ kind: 'fact', entityType: 'test', entityId: 'x', squadId: a.id, payload: { kept: false } }])
        throw new Error('rollback')
      })
    } catch {
      // expected
    }
    const actions = (await s.activity.list({ squadId: a.id, limit: 10 })).map((e) => e.action).sort()
    t.same(actions, ['contract.kept', 'contract.no_outbox'], 'both committed entries, not the rolled-back one')
    const rows = await outboxRowsOnce(s, cursor, 1, (r) => r.squadId === a.id)
    t.same(
      rows.map((r) => r.payload),
      [{ kept: true }],
      'the committed outbox row only',
    )
  })

  kit('costs: recordUnbudgeted writes only for unarchived squads, their own agents, and no budget anywhere', async (t, s) => {
    // Optional: without it, cost reports always take a transaction.
    if (!s.costs.recordUnbudgeted) return void t.ok(true, 'this storage has no recordUnbudgeted')
    const a = await squad(s)
    const ag = await agent(s, a.id, 'spender')
    const project = await s.projects.insert({ id: uuidv7(), squadId: a.id, name: 'p', description: null, status: 'active', goalId: null, budgetCents: null })
    const period = '2026-11'
    const entry = (projectId: string | null = null) => {
      const id = uuidv7()
      const delta = { costCents: 5, inputTokens: 10, cachedInputTokens: 0, outputTokens: 2, subscriptionTokens: 0, events: 1, cacheWriteTokens: 0, unpricedTokens: 0 }
      return {
        event: {
          id,
          squadId: a.id,
          agentId: ag.id,
          issueId: null,
          projectId,
          provider: 'openai',
          biller: null,
          billingType: 'metered_api' as const,
          model: 'gpt',
          inputTokens: 10,
          cachedInputTokens: 0,
          cacheWriteTokens: 0,
          outputTokens: 2,
          costCents: 5,
          costStatus: 'reported' as const,
          billingCode: null,
          occurredAt: new Date('2026-11-20T10:00:00Z'),
        },
        keys: [{ scope: 'squad' as const, key: '', period }, { scope: 'agent' as const, key: ag.id, period }, ...(projectId ? [{ scope: 'project' as const, key: projectId, period: 'all' }] : [])],
        delta,
        outbox: [{ kind: 'fact' as const, entityType: 'cost_event', entityId: id, squadId: a.id, payload: { id } }],
      }
    }
    const spent = async () => (await s.costs.rollups(a.id, period, 'squad', ['']))[0]?.costCents ?? 0

    const [first] = (await s.costs.recordUnbudgeted([entry(project.id)]))!
    t.equal(first!.event.costCents, 5, 'written when nothing has a budget')
    t.same(
      first!.totals.map((x) => [x.scope, x.costCents, x.events]),
      [
        ['squad', 5, 1],
        ['agent', 5, 1],
        ['project', 5, 1],
      ],
      'totals after the event',
    )
    t.equal(await spent(), 5)

    // Each kind of budget, and an archive, turns it away with nothing written.
    const refusals: Array<[string, () => Promise<unknown>, () => Promise<unknown>]> = [
      ['a squad budget in cents', () => s.squads.update(a.id, { budgetMonthlyCents: 100 }), () => s.squads.update(a.id, { budgetMonthlyCents: null })],
      ['a squad token ceiling', () => s.budgets.setSquadTokens(a.id, 1000), () => s.budgets.setSquadTokens(a.id, null)],
      ['an agent budget in cents', () => s.agents.update(ag.id, { budgetMonthlyCents: 100 }), () => s.agents.update(ag.id, { budgetMonthlyCents: null })],
      ['an agent token ceiling', () => s.budgets.setAgentTokens(ag.id, 1000), () => s.budgets.setAgentTokens(ag.id, null)],
      ['a project budget', () => s.projects.update(project.id, { budgetCents: 100 }), () => s.projects.update(project.id, { budgetCents: null })],
      ['an archived squad', () => s.squads.update(a.id, { status: 'archived' }), () => s.squads.update(a.id, { status: 'active' })],
    ]
    for (const [what, set, unset] of refusals) {
      await set()
      const e = entry(project.id)
      t.equal(await s.costs.recordUnbudgeted([e]), null, `refused with ${what}`)
      t.equal(await spent(), 5, `nothing added with ${what}`)
      t.same(
        (await s.outbox.readAfter('0', 100_000)).filter((r) => r.entityId === e.event.id),
        [],
        `no outbox row with ${what}`,
      )
      await unset()
    }
    // An agent of another squad, or a squad that does not exist: nothing written.
    const other = await agent(s, (await squad(s)).id, 'elsewhere')
    const stray = entry()
    stray.event.agentId = other.id
    stray.keys[1] = { scope: 'agent', key: other.id, period }
    t.equal(await s.costs.recordUnbudgeted([entry(), stray]), null, 'refused when one agent is not in its squad')
    const lost = entry()
    lost.event.squadId = uuidv7()
    t.equal(await s.costs.recordUnbudgeted([lost]), null, 'refused for a squad that does not exist')
    t.equal(await spent(), 5, 'nothing added by either')
    t.ok(await s.costs.recordUnbudgeted([entry()]), 'written again once every budget is gone')
    t.equal(await spent(), 10)
  })

  kit('costs: totals per UTC day and per provider, model and billing type, within [from, until)', async (t, s) => {
    const a = await squad(s)
    const ag = await agent(s, a.id, 'spender')
    const other = await squad(s)
    const otherAgent = await agent(s, other.id, 'elsewhere')
    const event = (
      squadId: string,
      agentId: string,
      at: string,
      model: string,
      billingType: 'metered_api' | 'subscription_included',
      costCents: number,
      costStatus: 'reported' | 'unpriced' = 'reported',
    ) => ({
      event: {
        id: uuidv7(),
        squadId,
        agentId,
        issueId: null,
        projectId: null,
        provider: model.startsWith('gpt') ? 'openai' : 'anthropic',
        biller: null,
        billingType,
        model,
        inputTokens: 100,
        cachedInputTokens: 10,
        cacheWriteTokens: 1,
        outputTokens: 20,
        costCents,
        costStatus,
        billingCode: null,
        occurredAt: new Date(at),
      },
      keys: [{ scope: 'squad' as const, key: '', period: at.slice(0, 7) }],
      delta: { costCents, inputTokens: 100, cachedInputTokens: 10, outputTokens: 20, subscriptionTokens: 0, events: 1, cacheWriteTokens: 1, unpricedTokens: 0 },
    })
    await s.transaction((tx) =>
      tx.costs.recordMany([
        event(a.id, ag.id, '2026-10-31T23:59:59.999Z', 'gpt', 'metered_api', 1),
        event(a.id, ag.id, '2026-11-01T00:00:00.000Z', 'gpt', 'metered_api', 2),
        event(a.id, ag.id, '2026-11-01T12:00:00.000Z', 'gpt', 'metered_api', 0, 'unpriced'),
        event(a.id, ag.id, '2026-11-03T08:00:00.000Z', 'claude', 'subscription_included', 0),
        event(a.id, ag.id, '2026-12-01T00:00:00.000Z', 'claude', 'metered_api', 50),
        event(other.id, otherAgent.id, '2026-11-02T00:00:00.000Z', 'gpt', 'metered_api', 7),
      ]),
    )
    const from = new Date('2026-11-01T00:00:00Z')
    const until = new Date('2026-12-01T00:00:00Z')
    t.same(
      (await s.costs.dailyTotals(a.id, from, until)).map((d) => [d.day, d.costCents, d.events, d.inputTokens, d.cacheWriteTokens, d.subscriptionTokens, d.unpricedTokens]),
      [
        ['2026-11-01', 2, 2, 200, 2, 130, 131],
        ['2026-11-03', 0, 1, 100, 1, 130, 0],
      ],
      'UTC days in range, oldest first; other squads and days outside left out',
    )
    t.same((await s.costs.modelTotals(a.id, from, until)).map((m) => [m.provider, m.model, m.billingType, m.costCents, m.events]).sort(), [
      ['anthropic', 'claude', 'subscription_included', 0, 1],
      ['openai', 'gpt', 'metered_api', 2, 2],
    ])
    t.same(await s.costs.dailyTotals(a.id, until, new Date('2026-12-01T00:00:00.001Z')).then((d) => d.map((x) => x.costCents)), [50], 'until is exclusive, from inclusive')
  })

  kit('costs: day and model totals add up across batches; a refused write adds nothing; ranges may end mid-day', async (t, s) => {
    const a = await squad(s)
    const ag = await agent(s, a.id, 'spender')
    const event = (at: string, model: string, billingType: 'metered_api' | 'subscription_included', costCents: number, costStatus: 'reported' | 'unpriced' = 'reported') => ({
      event: {
        id: uuidv7(),
        squadId: a.id,
        agentId: ag.id,
        issueId: null,
        projectId: null,
        provider: model.startsWith('gpt') ? 'openai' : 'anthropic',
        biller: null,
        billingType,
        model,
        inputTokens: 100,
        cachedInputTokens: 10,
        cacheWriteTokens: 1,
        outputTokens: 20,
        costCents,
        costStatus,
        billingCode: null,
        occurredAt: new Date(at),
      },
      keys: [{ scope: 'squad' as const, key: '', period: at.slice(0, 7) }],
      delta: { costCents, inputTokens: 100, cachedInputTokens: 10, outputTokens: 20, subscriptionTokens: 0, events: 1, cacheWriteTokens: 1, unpricedTokens: 0 },
    })
    await s.transaction((tx) =>
      tx.costs.recordMany([
        event('2026-11-05T01:00:00Z', 'gpt', 'metered_api', 3),
        event('2026-11-05T02:00:00Z', 'gpt', 'metered_api', 4),
        event('2026-11-05T03:00:00Z', 'claude', 'subscription_included', 0),
      ]),
    )
    await s.transaction((tx) =>
      tx.costs.recordMany([
        event('2026-11-05T23:59:59.999Z', 'gpt', 'metered_api', 5),
        event('2026-11-05T13:00:00Z', 'gpt', 'metered_api', 0, 'unpriced'),
        event('2026-11-10T10:00:00Z', 'gpt', 'metered_api', 7),
      ]),
    )
    // The one-statement path when the storage has it, else another batch.
    const third = [event('2026-11-05T18:00:00Z', 'gpt', 'metered_api', 6)]
    if (s.costs.recordUnbudgeted) t.ok(await s.costs.recordUnbudgeted(third), 'written without a transaction')
    else await s.transaction((tx) => tx.costs.recordMany(third))
    if (s.costs.recordUnbudgeted) {
      await s.squads.update(a.id, { budgetMonthlyCents: 100 })
      t.equal(await s.costs.recordUnbudgeted([event('2026-11-05T19:00:00Z', 'gpt', 'metered_api', 1000)]), null, 'refused: the squad has a budget')
      await s.squads.update(a.id, { budgetMonthlyCents: null })
    }
    const day = (d: { day: string } & CostTotals) => [d.day, d.costCents, d.events, d.inputTokens, d.cachedInputTokens, d.cacheWriteTokens, d.outputTokens, d.subscriptionTokens, d.unpricedTokens]
    const model = (m: { provider: string; model: string; billingType: string; costCents: number; events: number; subscriptionTokens: number; unpricedTokens: number }) => [
      m.provider,
      m.model,
      m.billingType,
      m.costCents,
      m.events,
      m.subscriptionTokens,
      m.unpricedTokens,
    ]
    const month: [Date, Date] = [new Date('2026-11-01T00:00:00Z'), new Date('2026-12-01T00:00:00Z')]
    t.same(
      (await s.costs.dailyTotals(a.id, ...month)).map(day),
      [
        ['2026-11-05', 18, 6, 600, 60, 6, 120, 260, 131],
        ['2026-11-10', 7, 1, 100, 10, 1, 20, 0, 0],
      ],
      'the three batches of one day add up; the refused event is not there',
    )
    t.same((await s.costs.modelTotals(a.id, ...month)).map(model).sort(), [
      ['anthropic', 'claude', 'subscription_included', 0, 1, 130, 0],
      ['openai', 'gpt', 'metered_api', 25, 6, 130, 131],
    ])
    // A range that starts and ends mid-day counts exactly the events inside it.
    const ragged: [Date, Date] = [new Date('2026-11-05T02:30:00Z'), new Date('2026-11-10T10:00:00Z')]
    t.same(
      (await s.costs.dailyTotals(a.id, ...ragged)).map((d) => [d.day, d.costCents, d.events]),
      [['2026-11-05', 11, 4]],
      'from 02:30 on the 5th to 10:00 (exclusive) on the 10th',
    )
    t.same((await s.costs.modelTotals(a.id, ...ragged)).map((m) => [m.model, m.costCents, m.events]).sort(), [
      ['claude', 0, 1],
      ['gpt', 11, 3],
    ])
    t.same(
      (await s.costs.dailyTotals(a.id, new Date('2026-11-04T12:00:00Z'), new Date('2026-11-10T10:00:00.001Z'))).map((d) => [d.day, d.costCents, d.events]),
      [
        ['2026-11-05', 18, 6],
        ['2026-11-10', 7, 1],
      ],
      'whole days and a ragged end: until one millisecond past an event takes it',
    )
    t.same(await s.costs.dailyTotals(a.id, month[1], month[0]), [], 'an empty range')
  })

  kit('jobs are claimed by one worker only, and a lapsed lease is claimable again', async (t, s) => {
    for (let i = 0; i < 6; i++) await s.jobs.enqueue({ id: uuidv7(), kind: 'contract', squadId: null, payload: { i } })
    const [a, b] = await Promise.all([s.jobs.claim(['contract'], 'w1', 60_000, 6), s.jobs.claim(['contract'], 'w2', 60_000, 6)])
    const ids = [...a, ...b].map((j) => j.id)
    t.equal(ids.length, 6, 'all six claimed')
    t.equal(new Set(ids).size, 6, 'none claimed twice')
    const first = (a[0] ?? b[0])!
    const owner = a.includes(first) ? 'w1' : 'w2'
    t.equal(await s.jobs.complete(first.id, owner === 'w1' ? 'w2' : 'w1', null), false, 'another worker cannot complete it')
    t.equal(await s.jobs.complete(first.id, owner, { done: true }), true)
    t.same((await s.jobs.get(first.id))?.result, { done: true })
    await s.jobs.enqueue({ id: uuidv7(), kind: 'lease', squadId: null, payload: {} })
    const [leased] = await s.jobs.claim(['lease'], 'w1', 1, 1)
    await new Promise((r) => setTimeout(r, 30))
    const [again] = await s.jobs.claim(['lease'], 'w2', 60_000, 1)
    t.equal(again?.id, leased?.id, 'the lapsed lease was taken over')
    t.equal(again?.attempts, 2)
  })

  kit('interactions are idempotent and documents guard their revision', async (t, s) => {
    const a = await squad(s)
    const i1 = await issue(s, a.id, 1)
    const base = {
      issueId: i1.id,
      squadId: a.id,
      kind: 'request_confirmation' as const,
      payload: { prompt: 'ok?' },
      continuationPolicy: null,
      idempotencyKey: 'k1',
      createdByType: 'system' as const,
      createdById: 't',
    }
    const first = await s.interactions.insert({ ...base, id: uuidv7() })
    const second = await s.interactions.insert({ ...base, id: uuidv7() })
    t.equal(first.created, true)
    t.equal(second.created, false)
    t.equal(second.interaction.id, first.interaction.id)
    const rev1 = uuidv7()
    const doc = await s.documents.put({ id: uuidv7(), issueId: i1.id, key: 'plan', title: 'Plan', format: 'markdown', body: 'v1', baseRevisionId: null, newRevisionId: rev1 })
    t.equal(doc?.revisionId, rev1)
    t.equal(
      await s.documents.put({ id: uuidv7(), issueId: i1.id, key: 'plan', title: 'Plan', format: 'markdown', body: 'x', baseRevisionId: null, newRevisionId: uuidv7() }),
      undefined,
      'create over an existing document is a conflict',
    )
    t.ok(await s.documents.put({ id: doc!.id, issueId: i1.id, key: 'plan', title: 'Plan', format: 'markdown', body: 'v2', baseRevisionId: rev1, newRevisionId: uuidv7() }))
    t.equal(
      await s.documents.put({ id: doc!.id, issueId: i1.id, key: 'plan', title: 'Plan', format: 'markdown', body: 'v3', baseRevisionId: rev1, newRevisionId: uuidv7() }),
      undefined,
      'a stale revision is a conflict',
    )
    t.equal((await s.documents.get(i1.id, 'plan'))?.body, 'v2')
  })
  kit('routine runs: one per trigger and due time, one per idempotency key; a due schedule is claimed once', async (t, s) => {
    const a = await squad(s)
    const routineId = uuidv7()
    await s.routines.insert({
      id: routineId,
      squadId: a.id,
      title: 'r',
      description: null,
      projectId: null,
      goalId: null,
      parentIssueId: null,
      assigneeAgentId: null,
      priority: 'medium',
      status: 'active',
      concurrencyPolicy: 'always_enqueue',
      catchUpPolicy: 'skip_missed',
      variables: [],
      env: { A: 'b' },
      createdByAgentId: null,
      envWrittenBy: 'operator',
      revisionId: uuidv7(),
      revisionNumber: 1,
    })
    const due = new Date('2030-01-01T00:00:00Z')
    const trigger = await s.routines.insertTrigger({
      id: uuidv7(),
      squadId: a.id,
      routineId,
      kind: 'schedule',
      label: null,
      enabled: true,
      cronExpression: '0 * * * *',
      timezone: 'UTC',
      nextFireAt: due,
      signingMode: null,
      replayWindowSec: null,
      publicId: null,
      secretHash: null,
      secretCiphertext: null,
      secretRotatedAt: null,
      createdByAgentId: null,
    })
    const run = (over: Record<string, unknown>) => ({
      id: uuidv7(),
      squadId: a.id,
      routineId,
      triggerId: null,
      source: 'schedule' as const,
      status: 'queued' as const,
      scheduledFor: null,
      idempotencyKey: null,
      variables: {},
      payload: null,
      projectId: null,
      assigneeAgentId: null,
      requestedByAgentId: null,
      issueId: null,
      linkedRunId: null,
      error: null,
      ...over,
    })
    const first = await s.routines.insertRun(run({ triggerId: trigger.id, scheduledFor: due }))
    const again = await s.routines.insertRun(run({ triggerId: trigger.id, scheduledFor: due }))
    t.equal(first.created, true)
    t.equal(again.created, false, 'the same trigger and due time is refused')
    t.equal(again.run.id, first.run.id, 'and answers the stored run')
    t.same(
      (await s.routines.insertRuns([run({ triggerId: trigger.id, scheduledFor: due }), run({ triggerId: trigger.id, scheduledFor: new Date('2030-01-01T01:00:00Z') })])).length,
      1,
      'a bulk insert skips the conflicting row',
    )
    const k1 = await s.routines.insertRun(run({ source: 'manual', idempotencyKey: 'k' }))
    const k2 = await s.routines.insertRun(run({ source: 'manual', idempotencyKey: 'k' }))
    t.equal(k2.created, false)
    t.equal(k2.run.id, k1.run.id, 'the same idempotency key answers the stored run')
    t.same(
      (await s.routines.runsByIdempotencyKeys(routineId, ['k', 'unknown'])).map((x) => x.id),
      [k1.run.id],
      'runs by idempotency keys',
    )
    t.same(await s.routines.runsByIdempotencyKeys(routineId, []), [])
    t.same(await s.routines.envForRun(k1.run.id), { A: 'b' })
    t.equal(await s.routines.envForRun(uuidv7()), null)
    t.same(
      await s.routines.runEnv(k1.run.id),
      { env: { A: 'b' }, envWrittenBy: 'operator', routineAssigneeAgentId: null, createdByAgentId: null, runAssigneeAgentId: null, requestedByAgentId: null },
      'with who wrote it and who the run is for',
    )
    t.equal(await s.routines.runEnv(uuidv7()), null)
    t.equal(await s.routines.countCreatedByAgents(a.id), 0, 'an Operator routine is not an agent one')

    // Two sessions claiming at once: the schedule goes to one of them; the other sees it advanced.
    const claim = () =>
      s.transaction(async (tx) => {
        const got = await tx.routines.claimDueSchedules(new Date('2030-01-01T00:00:30Z'), 10)
        await tx.routines.advanceSchedules(got.map((g) => ({ id: g.trigger.id, nextFireAt: new Date('2030-01-01T01:00:00Z'), lastFiredAt: due })))
        return got.length
      })
    const claimed = await Promise.all([claim(), claim()])
    t.equal(claimed[0]! + claimed[1]!, 1, 'claimed once')
    t.equal(await claim(), 0, 'not due any more')
    t.equal((await s.routines.getTrigger(trigger.id))?.nextFireAt?.toISOString(), '2030-01-01T01:00:00.000Z')
  })

  // Secrets (contracts/secrets.ts) ---------------------------------------------------------------

  const secret = (squadId: string, key: string) => ({
    id: uuidv7(),
    squadId,
    key,
    name: key,
    provider: 'local_encrypted',
    providerConfigId: null,
    status: 'active' as const,
    managedMode: 'svc_managed' as const,
    externalRef: null,
    latestVersion: 1,
    description: null,
    providerMetadata: { k: 'v' },
  })

  kit('secrets: concurrent version reservations are distinct and strictly increasing', async (t, s) => {
    const a = await squad(s)
    const sec = await s.secrets.insert(secret(a.id, 'TOKEN'))
    const n = 20
    const got = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        s.transaction(async (tx) => {
          const v = await tx.secrets.bumpVersion(sec.id, new Date())
          await tx.secrets.insertVersion({ secretId: sec.id, version: v!, provider: 'local_encrypted', providerConfigId: null, ref: `ref-${i}`, keyId: 'k', providerVersionRef: null })
          return v!
        }),
      ),
    )
    t.same(
      [...got].sort((x, y) => x - y),
      Array.from({ length: n }, (_, i) => i + 2),
      'each reservation got its own number',
    )
    t.equal((await s.secrets.get(sec.id))?.latestVersion, n + 1)
    t.equal((await s.secrets.listVersions(sec.id)).length, n)
    const found = await s.secrets.getForResolve(sec.id, 'latest')
    t.equal(found?.version?.version, n + 1, 'getForResolve reads the latest version')
    t.equal((await s.secrets.getForResolve(sec.id, 5))?.version?.version, 5)
    t.equal((await s.secrets.getForResolve(sec.id, 999))?.version, undefined, 'an absent version is undefined, the secret still found')
  })

  kit('secrets: a key is unique among live secrets (UniqueViolation secrets_squad_key)', async (t, s) => {
    const a = await squad(s)
    const first = await s.secrets.insert(secret(a.id, 'DB_PASSWORD'))
    t.same(first.providerMetadata, { k: 'v' }, 'JSON metadata round-trips')
    let err: unknown
    try {
      await s.secrets.insert(secret(a.id, 'DB_PASSWORD'))
    } catch (e) {
      err = e
    }
    t.ok(err instanceof UniqueViolation && err.constraint === 'secrets_squad_key', 'a second live secret with the key is refused')
    await s.secrets.update(first.id, { status: 'deleted' })
    t.ok(await s.secrets.insert(secret(a.id, 'DB_PASSWORD')), 'a deleted secret frees its key')
    t.same(
      (await s.secrets.list(a.id)).map((x) => x.key),
      ['DB_PASSWORD'],
      'lists leave deleted secrets out',
    )
  })

  kit('secrets: access events with lastResolvedAt, and the master key id claimed once', async (t, s) => {
    const a = await squad(s)
    const sec = await s.secrets.insert(secret(a.id, 'API'))
    const at = new Date('2026-01-02T03:04:05.000Z')
    const event = {
      squadId: a.id,
      secretId: sec.id,
      version: 1,
      provider: 'local_encrypted',
      actorType: 'system',
      actorId: 't',
      consumerType: 'routine',
      consumerId: 'r',
      configPath: 'env.API',
      issueId: null,
      heartbeatRunId: null,
    }
    await s.secrets.recordAccess({ ...event, id: uuidv7(), outcome: 'failure', errorCode: 'secret_disabled' }, null)
    t.equal((await s.secrets.get(sec.id))?.lastResolvedAt, null, 'a failure leaves lastResolvedAt alone')
    await s.secrets.recordAccess({ ...event, id: uuidv7(), outcome: 'success', errorCode: null }, at)
    t.equal((await s.secrets.get(sec.id))?.lastResolvedAt?.toISOString(), at.toISOString(), 'a success sets it in the same call')
    t.same(
      (await s.secrets.listAccessEvents(sec.id, { limit: 10 })).map((e) => e.outcome),
      ['success', 'failure'],
      'newest first',
    )
    t.equal(await s.secrets.getMasterKeyId(), undefined)
    const [x, y] = await Promise.all([s.secrets.claimMasterKeyId('key-a'), s.secrets.claimMasterKeyId('key-b')])
    t.equal(x, y, 'two nodes claiming at once agree on one key id')
    t.equal(await s.secrets.claimMasterKeyId('key-c'), x, 'a later claim reads the recorded id')
  })

  kit('commit notes reach onCommit listeners after the commit, never after a rollback', async (t, s) => {
    if (!s.onCommit) {
      t.ok(true, 'this storage has no onCommit (optional)')
      return
    }
    const heard: string[][] = []
    const off = s.onCommit((notes) => heard.push(notes.map((n) => n.reason)))
    let keepsNotes = false
    try {
      await s.transaction(async (tx) => {
        keepsNotes = typeof tx.note === 'function'
        tx.note?.({ kind: 'wake_queued', reason: 'mention' })
        // A nested transaction joins the outer one: its notes wait for the outer commit.
        await s.transaction(async (inner) => inner.note?.({ kind: 'wake_queued', reason: 'assignment' }))
        t.same(heard, [], 'nothing is heard before the commit')
      })
      await s
        .transaction(async (tx) => {
          tx.note?.({ kind: 'wake_queued', reason: 'manual' })
          throw new Error('roll back')
        })
        .catch(() => undefined)
      if (!keepsNotes) {
        t.ok(true, 'this storage keeps no notes (optional)')
        return
      }
      t.same(
        heard.filter((n) => n.length),
        [['mention', 'assignment']],
        "one commit's notes together, in order; the rolled-back note is never heard",
      )
    } finally {
      off()
    }
  })

  kit('the event feed: final activity in commit order, by squad, with head and locate', async (t, s) => {
    const a = await squad(s)
    const b = await squad(s)
    const start = await s.events.head()
    let commits = 0
    const off = s.onCommit?.(() => commits++)
    const entry = (squadId: string, n: number) => ({
      id: uuidv7(),
      squadId,
      actorType: 'system' as const,
      actorId: 'kit',
      action: 'issue.updated',
      entityType: 'issue',
      entityId: uuidv7(),
      agentId: null,
      runId: null,
      details: { n },
      createdAt: new Date(),
    })
    await s.transaction((tx) => tx.activity.record([entry(a.id, 1), entry(a.id, 2)], []))
    await s.transaction((tx) => tx.activity.record([entry(b.id, 3)], []))
    await s.transaction((tx) => tx.activity.record([entry(a.id, 4)], []))
    if (off) {
      t.ok(commits >= 3, 'onCommit listeners hear every commit')
      off()
    }
    const all = await feedOnce(s, start, 4)
    t.same(
      all.map((e) => e.details?.n),
      [1, 2, 3, 4],
      'in commit order',
    )
    t.ok(
      all.every((e, i) => i === 0 || compareEventCursors(all[i - 1]!.cursor, e.cursor) < 0),
      'cursors increase',
    )
    t.ok(
      all.every((e) => isEventCursor(e.cursor)),
      'cursors have the documented shape',
    )
    t.same(
      all.map((e) => e.action),
      Array(4).fill('issue.updated'),
    )
    t.ok(all[0]!.createdAt instanceof Date)
    const ofA = (await s.events.readAfter(start, 10, a.id)).events
    t.same(
      ofA.map((e) => e.details?.n),
      [1, 2, 4],
      'one squad',
    )
    t.same(
      (await s.events.readAfter(all[1]!.cursor, 10)).events.map((e) => e.details?.n),
      [3, 4],
      'after a cursor',
    )
    t.same(
      (await s.events.readAfter(all[0]!.cursor, 1)).events.map((e) => e.details?.n),
      [2],
      'limited',
    )
    t.same((await s.events.readAfter(all[3]!.cursor, 10)).events, [], 'nothing after the last')
    t.equal(await s.events.head(), all[3]!.cursor, 'head is the newest final event')
    t.equal((await s.events.locate(all[2]!.cursor))?.getTime(), all[2]!.createdAt.getTime(), 'locate finds an event')
    t.equal(await s.events.locate(`1-0-${uuidv7()}`), undefined, 'and not one never stored')
  })

  kit('runs: a session is held by one running run; usage merges its cost status; finish keeps error code, retry time and session', async (t, s) => {
    const a = await squad(s)
    const ag = await agent(s, a.id, 'cli')
    const caps = { perAgent: 5, perSquad: null, perInstance: null }
    const queue = async (retryAttempt = 0) => {
      const id = uuidv7()
      await s.heartbeatRuns.queue({ id, squadId: a.id, agentId: ag.id, issueId: null, reason: 'manual', approvalId: null, commentId: null, routineRunId: null, continuationDepth: 0, retryAttempt })
      // One queued run per agent and issue: start each before queueing the next.
      return id
    }
    const startWith = async (id: string, sessionId: string | null) => {
      const now = new Date()
      t.equal(await s.transaction(() => s.heartbeatRuns.start(id, { nodeId: 'n', startedAt: now, deadlineAt: new Date(now.getTime() + 60_000), sessionId }, caps)), 'started')
      return (await s.heartbeatRuns.get(id))!
    }
    const first = await startWith(await queue(), 'sess-1')
    t.equal(first.sessionId, 'sess-1', 'the first run holds the session')
    const second = await startWith(await queue(2), 'sess-1')
    t.equal(second.sessionId, null, 'a second running run of the agent does not get the same session')
    t.equal(second.retryAttempt, 2)
    t.equal(first.usage.costStatus, null, 'no usage yet: no cost status')
    await s.heartbeatRuns.addUsage(first.id, { inputTokens: 10, outputTokens: 5, costCents: 0, unpricedTokens: 15, costStatus: 'unpriced', provider: 'openai', billingType: 'unknown' })
    const pick = (u: Record<string, unknown>, keys: string[]) => Object.fromEntries(keys.map((k) => [k, u[k]]))
    t.same(
      pick((await s.heartbeatRuns.get(first.id))!.usage, ['inputTokens', 'outputTokens', 'costCents', 'costStatus', 'unpricedTokens', 'provider', 'billingType']),
      { inputTokens: 10, outputTokens: 5, costCents: null, costStatus: 'unpriced', unpricedTokens: 15, provider: 'openai', billingType: 'unknown' },
      'unpriced: null cents',
    )
    await s.heartbeatRuns.addUsage(first.id, { inputTokens: 1, outputTokens: 1, costCents: 7, cachedInputTokens: 3, cacheWriteTokens: 2, costStatus: 'reported' })
    t.same(
      pick((await s.heartbeatRuns.get(first.id))!.usage, ['inputTokens', 'cachedInputTokens', 'cacheWriteTokens', 'costCents', 'costStatus', 'unpricedTokens']),
      { inputTokens: 11, cachedInputTokens: 3, cacheWriteTokens: 2, costCents: 7, costStatus: 'estimated', unpricedTokens: 15 },
      'a mix is estimated',
    )
    const retryAt = new Date(Date.now() + 3_600_000)
    const ended = await s.transaction(() =>
      s.heartbeatRuns.finish(first.id, ['running'], { status: 'failed', finishedAt: new Date(), error: 'limited', errorCode: 'transient_upstream', retryNotBefore: retryAt, sessionId: null }),
    )
    t.same([ended?.status, ended?.errorCode, ended?.sessionId], ['failed', 'transient_upstream', null])
    t.equal(ended!.retryNotBefore?.getTime(), retryAt.getTime())
    const third = await startWith(await queue(), 'sess-1')
    t.equal(third.sessionId, 'sess-1', 'once the holder ended, the session is free again')
    if (s.agents.setSession) {
      const sessions = async () => ((await s.agents.get(ag.id))!.runtimeState.sessions ?? {}) as Record<string, { sessionId: string }>
      await Promise.all([s.agents.setSession(ag.id, 'k1', { sessionId: 's1' }), s.agents.setSession(ag.id, 'k2', { sessionId: 's2' })])
      t.same(await sessions(), { k1: { sessionId: 's1' }, k2: { sessionId: 's2' } }, 'setSession: concurrent keys both land')
      await s.agents.setSession(ag.id, 'k1', null, 'other')
      t.same(Object.keys(await sessions()), ['k1', 'k2'], 'a removal for another session id leaves it')
      await s.agents.setSession(ag.id, 'k1', null, 's1')
      t.same(await sessions(), { k2: { sessionId: 's2' } }, 'removed when it is still the one named')
    }
  })

  kit('run output: chunks kept per run, read after an id, and in the event feed as run.output', async (t, s) => {
    const a = await squad(s)
    const ag = await agent(s, a.id, 'writer')
    const runId = uuidv7()
    await s.heartbeatRuns.queue({ id: runId, squadId: a.id, agentId: ag.id, issueId: null, reason: 'manual', approvalId: null, commentId: null, routineRunId: null, continuationDepth: 0 })
    const start = await s.events.head()
    const chunk = (text: string, offset: number, stream: 'stdout' | 'stderr' = 'stdout') => ({ runId, squadId: a.id, agentId: ag.id, issueId: null, stream, text, offset })
    await s.transaction(() => s.runOutput.append([chunk('one\n', 0), chunk('oops\n', 0, 'stderr')], 1000))
    await s.transaction(() => s.runOutput.append([chunk('two\n', 4)], 1000))
    const all = await s.runOutput.read(runId, '0', 10)
    t.same(
      all.map((c) => [c.stream, c.text, c.offset]),
      [
        ['stdout', 'one\n', 0],
        ['stderr', 'oops\n', 0],
        ['stdout', 'two\n', 4],
      ],
    )
    t.same(
      (await s.runOutput.read(runId, all[0]!.id, 10)).map((c) => c.text),
      ['oops\n', 'two\n'],
      'after an id',
    )
    const feed = await feedOnce(s, start, 3)
    t.same(
      feed.map((e) => [e.action, e.details?.text]),
      [
        ['run.output', 'one\n'],
        ['run.output', 'oops\n'],
        ['run.output', 'two\n'],
      ],
      'each chunk is a run.output event, in order',
    )
    t.equal(feed[0]!.runId, runId)
    t.equal(feed[0]!.squadId, a.id)
    t.ok(feed.every((e, i) => i === 0 || compareEventCursors(feed[i - 1]!.cursor, e.cursor) < 0))
    t.equal((await s.events.locate(feed[1]!.cursor))?.getTime(), feed[1]!.createdAt.getTime(), 'locate finds an output event')
    // The kept tail: older chunks go once the newer ones hold keepChars.
    await s.transaction(() => s.runOutput.append([chunk('x'.repeat(50), 8), chunk('y'.repeat(50), 58)], 60))
    t.same(
      (await s.runOutput.read(runId, '0', 10)).map((c) => c.text[0]),
      ['x', 'y'],
      'only the tail is kept',
    )
    t.ok(await s.events.locate(feed[0]!.cursor), 'a pruned chunk still locates its place in the feed (resume without resync)')
  })
}

/**
 * The outbox rows after `cursor` (those `keep` passes) once there are at least `n`. A reader sees a
 * row once no transaction that began before it commits is still open (so that no row is ever
 * skipped); on a shared server, another database's transactions can hold that horizon back for a
 * moment: wait for it rather than assume it.
 */
async function outboxRowsOnce(s: Storage, cursor: string, n: number, keep: (row: OutboxEntry) => boolean = () => true): Promise<OutboxEntry[]> {
  for (;;) {
    const read = (await s.outbox.readAfter(cursor, 100)).filter(keep)
    if (read.length >= n) return read
    await new Promise((r) => setImmediate(r))
  }
}

/** The feed's events after `cursor` once there are at least `n` (the visibility horizon, as above). */
async function feedOnce(s: Storage, cursor: string, n: number): Promise<FeedEvent[]> {
  for (;;) {
    const { events } = await s.events.readAfter(cursor, 100)
    if (events.length >= n) return events
    await new Promise((r) => setImmediate(r))
  }
}
