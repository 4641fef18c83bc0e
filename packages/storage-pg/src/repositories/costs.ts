import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { ActivityEntry, BillingType, CostEntry, CostRepository, CostTotals, NewCostEvent, NewOutboxEntry, Period, RecordedCost, RollupKey, RollupScope } from '@slaw/core'
import { activityInsert, outboxInsert } from './activity.js'
import type { Database } from '../schema.js'
import { recordset } from '../sql-helpers.js'

const zero = (): CostTotals => ({ costCents: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, subscriptionTokens: 0, events: 0, cacheWriteTokens: 0, unpricedTokens: 0 })

/** Tokens a token ceiling counts: every token of a subscription-billed event, or of one nobody priced. */
const subscriptionTokensExpr = sql`case when billing_type <> 'metered_api' or cost_status = 'unpriced' then input_tokens + cached_input_tokens + output_tokens else 0 end`
/** Every token of an unpriced event: spend its cents (0) do not show. */
const unpricedTokensExpr = sql`case when cost_status = 'unpriced' then input_tokens + cached_input_tokens + cache_write_tokens + output_tokens else 0 end`

/** sum() over int8 is numeric; cast back so the driver hands out JS numbers. */
const totalsSelect = sql`coalesce(sum(cost_cents), 0)::int8 as "costCents",
  coalesce(sum(input_tokens), 0)::int8 as "inputTokens",
  coalesce(sum(cached_input_tokens), 0)::int8 as "cachedInputTokens",
  coalesce(sum(output_tokens), 0)::int8 as "outputTokens",
  coalesce(sum(${subscriptionTokensExpr}), 0)::int8 as "subscriptionTokens",
  count(*) as "events",
  coalesce(sum(cache_write_tokens), 0)::int8 as "cacheWriteTokens",
  coalesce(sum(${unpricedTokensExpr}), 0)::int8 as "unpricedTokens"`

const totalFields = ['costCents', 'inputTokens', 'cachedInputTokens', 'outputTokens', 'subscriptionTokens', 'events', 'cacheWriteTokens', 'unpricedTokens'] as const

/**
 * Reads totals from a result row. With a prefix, fields are named `<prefix>CostCents` and so on:
 * camelCase without underscores, which the CamelCasePlugin leaves as they are.
 */
const totalsFrom = (r: Record<string, unknown> | undefined, prefix = ''): CostTotals => {
  const out = zero()
  if (!r) return out
  for (const f of totalFields) out[f] = Number(r[prefix ? prefix + f[0]!.toUpperCase() + f.slice(1) : f] ?? 0)
  return out
}

/** Lock order of a squad's rollup rows: the squad's own first (see recordMany). */
const scopeRank: Record<RollupScope, number> = { squad: 0, agent: 1, project: 2, provider: 3 }
const rollupId = (squadId: string, k: RollupKey) => `${squadId}|${k.period}|${k.scope}|${k.key}`
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

const rollupColumns = sql`cost_cents as "costCents", input_tokens as "inputTokens", cached_input_tokens as "cachedInputTokens",
  output_tokens as "outputTokens", subscription_tokens as "subscriptionTokens", events, cache_write_tokens as "cacheWriteTokens", unpriced_tokens as "unpricedTokens"`

const eventColumns = [
  ['id', 'uuid'],
  ['squad_id', 'uuid'],
  ['agent_id', 'uuid'],
  ['issue_id', 'uuid'],
  ['project_id', 'uuid'],
  ['provider', 'text'],
  ['biller', 'text'],
  ['billing_type', 'text'],
  ['model', 'text'],
  ['input_tokens', 'int8'],
  ['cached_input_tokens', 'int8'],
  ['output_tokens', 'int8'],
  ['cost_cents', 'int8'],
  ['billing_code', 'text'],
  ['occurred_at', 'timestamptz'],
  ['cache_write_tokens', 'int8'],
  ['cost_status', 'text'],
] as const
const rollupValueColumns = [
  ['squad_id', 'uuid'],
  ['period', 'text'],
  ['scope', 'text'],
  ['scope_key', 'text'],
  ['cost_cents', 'int8'],
  ['input_tokens', 'int8'],
  ['cached_input_tokens', 'int8'],
  ['output_tokens', 'int8'],
  ['subscription_tokens', 'int8'],
  ['events', 'int8'],
  ['cache_write_tokens', 'int8'],
  ['unpriced_tokens', 'int8'],
] as const

const dayMs = 86_400_000
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)

/** Sums of daySpan's rows, named as totalsFrom reads them. */
const spanTotals = sql`coalesce(sum(cost_cents), 0)::int8 as "costCents",
  coalesce(sum(input_tokens), 0)::int8 as "inputTokens",
  coalesce(sum(cached_input_tokens), 0)::int8 as "cachedInputTokens",
  coalesce(sum(output_tokens), 0)::int8 as "outputTokens",
  coalesce(sum(subscription_tokens), 0)::int8 as "subscriptionTokens",
  coalesce(sum(events), 0)::int8 as "events",
  coalesce(sum(cache_write_tokens), 0)::int8 as "cacheWriteTokens",
  coalesce(sum(unpriced_tokens), 0)::int8 as "unpricedTokens"`

/**
 * A squad's figures in [from, until) as rows of (day, provider, model, billing type, totals): the
 * whole UTC days from cost_day_rollups (a primary-key range, days × models rows), and only the
 * ragged edges of a range that does not start or end at midnight from the events themselves (a
 * range of cost_events_window). A month is whole days: no event is read. Undefined for an empty range.
 */
function daySpan(squadId: string, from: Date, until: Date): RawBuilder<unknown> | undefined {
  const firstMidnight = Math.ceil(from.getTime() / dayMs) * dayMs
  const lastMidnight = Math.floor(until.getTime() / dayMs) * dayMs
  const whole = firstMidnight < lastMidnight
  const parts: RawBuilder<unknown>[] = []
  if (whole) {
    parts.push(sql`select day, provider, model, billing_type, cost_cents, input_tokens, cached_input_tokens, output_tokens, subscription_tokens, events,
        cache_write_tokens, unpriced_tokens
      from cost_day_rollups where squad_id = ${squadId} and day >= ${isoDay(firstMidnight)}::date and day < ${isoDay(lastMidnight)}::date`)
  }
  const edges: Array<[Date, Date]> = whole
    ? [
        [from, new Date(firstMidnight)],
        [new Date(lastMidnight), until],
      ]
    : [[from, until]]
  for (const [a, b] of edges) {
    if (a >= b) continue
    parts.push(sql`select (occurred_at at time zone 'UTC')::date as day, provider, model, billing_type, cost_cents, input_tokens, cached_input_tokens, output_tokens,
        ${subscriptionTokensExpr} as subscription_tokens, 1::int8 as events, cache_write_tokens, ${unpricedTokensExpr} as unpriced_tokens
      from cost_events where squad_id = ${squadId} and occurred_at >= ${a} and occurred_at < ${b}`)
  }
  return parts.length ? sql.join(parts, sql` union all `) : undefined
}

export class PgCostRepository implements CostRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async record(event: NewCostEvent, keys: RollupKey[], delta: CostTotals, alongside: { activity?: ActivityEntry[]; outbox?: NewOutboxEntry[] } = {}): Promise<RecordedCost> {
    return (await this.recordMany([{ event, keys, delta, ...alongside }]))[0]!
  }

  async recordMany(entries: CostEntry[]): Promise<RecordedCost[]> {
    return (await this.write(entries, false))!
  }

  async recordUnbudgeted(entries: CostEntry[]): Promise<RecordedCost[] | null> {
    return this.write(entries, true)
  }

  /**
   * The one statement of `recordMany`. `guarded`: the writes happen only if, once their rows are
   * share-locked, every squad exists unarchived, every agent exists in its event's squad, and no
   * squad, agent or project has a budget (cents or tokens); otherwise nothing is written and the
   * answer is null. A row changed by a transaction
   * that commits while the statement waits for its lock is judged as committed (PostgreSQL
   * re-checks a locked row's conditions on its newest version), and the guard's locks are taken
   * before any rollup row's: its subqueries run before the first row is written.
   */
  private async write(entries: CostEntry[], guarded: boolean): Promise<RecordedCost[] | null> {
    if (!entries.length) return []
    if (entries.some((x) => !x.keys.length)) throw new TypeError('record: at least one rollup key')
    const activity = entries.flatMap((x) => x.activity ?? [])
    const outbox = entries.flatMap((x) => x.outbox ?? [])
    // One VALUES row per rollup key with the batch's summed delta, in lock order: squad by squad
    // (by id), each squad's own row first, then agents, projects, providers. Every writer locks in
    // this order, so concurrent batches and single events queue on the squad row and never deadlock.
    const sums = new Map<string, { squadId: string; key: RollupKey; delta: CostTotals }>()
    for (const x of entries) {
      for (const k of x.keys) {
        const id = rollupId(x.event.squadId, k)
        const sum = sums.get(id) ?? { squadId: x.event.squadId, key: k, delta: zero() }
        for (const f of totalFields) sum.delta[f] += x.delta[f]
        sums.set(id, sum)
      }
    }
    const ordered = [...sums.values()].sort(
      (a, b) => compare(a.squadId, b.squadId) || scopeRank[a.key.scope] - scopeRank[b.key.scope] || compare(a.key.period, b.key.period) || compare(a.key.key, b.key.key),
    )
    const squadIds = [...new Set(entries.map((x) => x.event.squadId))]
    const agentIds = [...new Set(entries.map((x) => x.event.agentId))]
    const projectIds = [...new Set(entries.flatMap((x) => (x.event.projectId ? [x.event.projectId] : [])))]
    // Each agent must belong to the squad its event names (an agent named with two squads fails one).
    const agentPairs = [...new Set(entries.map((x) => `${x.event.agentId} ${x.event.squadId}`))].map((p) => p.split(' ') as [string, string])
    const gate = guarded ? sql`(select ok from ok)` : undefined
    const guard = guarded
      ? sql`gs as (select id from squads where id in (${sql.join(squadIds)}) and status <> 'archived'
                     and budget_monthly_cents is null and budget_monthly_tokens is null for share),
            ga as (select id from agents where (id, squad_id) in (${sql.join(agentPairs.map(([agentId, squadId]) => sql`(${agentId}::uuid, ${squadId}::uuid)`))})
                     and budget_monthly_cents is null and budget_monthly_tokens is null for share),
            ${projectIds.length ? sql`gp as (select id from projects where id in (${sql.join(projectIds)}) and budget_cents is null for share),` : sql``}
            ok as (select (select count(*) from gs) = ${squadIds.length} and (select count(*) from ga) = ${agentPairs.length}
                      ${projectIds.length ? sql`and (select count(*) from gp) = ${projectIds.length}` : sql``} as ok),`
      : sql``
    // Rows as one JSON parameter each (see recordset): one statement text whatever the batch size.
    const values = recordset(
      ordered.map(({ squadId, key: k, delta: d }) => ({
        squad_id: squadId,
        period: k.period,
        scope: k.scope,
        scope_key: k.key,
        cost_cents: d.costCents,
        input_tokens: d.inputTokens,
        cached_input_tokens: d.cachedInputTokens,
        output_tokens: d.outputTokens,
        subscription_tokens: d.subscriptionTokens,
        events: d.events,
        cache_write_tokens: d.cacheWriteTokens,
        unpriced_tokens: d.unpricedTokens,
      })),
      rollupValueColumns,
      gate,
    )
    const events = recordset(
      entries.map(({ event: e }) => ({
        id: e.id,
        squad_id: e.squadId,
        agent_id: e.agentId,
        issue_id: e.issueId,
        project_id: e.projectId,
        provider: e.provider,
        biller: e.biller,
        billing_type: e.billingType,
        model: e.model,
        input_tokens: e.inputTokens,
        cached_input_tokens: e.cachedInputTokens,
        output_tokens: e.outputTokens,
        cost_cents: e.costCents,
        billing_code: e.billingCode,
        occurred_at: e.occurredAt,
        cache_write_tokens: e.cacheWriteTokens,
        cost_status: e.costStatus,
      })),
      eventColumns,
      gate,
    )
    // Optional CTEs; data-modifying CTEs run whether or not the query reads them.
    // dy: the day-and-model rollup (cost_day_rollups), the batch's events summed per key from what
    // ev inserted (so the guard holds there too) and upserted in key order. The query never reads
    // it, so it runs once the query is done: after `up` has locked the rollup rows, the squad's
    // first, which every writer of the squad queues on.
    const activityCte = activity.length ? sql`act as (${activityInsert(activity, gate)}),` : sql``
    const outboxCte = outbox.length ? sql`ob as (${outboxInsert(outbox, gate)}),` : sql``
    // One round trip: the activity entries and outbox rows, the events, their rollups, and the
    // token ceilings the budget check needs next (rows told apart by "row"; "ref" is the squad's
    // id for rollups and squads, the agent's for agents). Without the CamelCasePlugin: the
    // statement is raw SQL whose result columns are named in camelCase already, and the plugin
    // would copy its whole node tree on every execution (a few per cent of a cost event's CPU).
    const { rows } = await sql<Record<string, unknown>>`
      with ${guard} ${activityCte} ${outboxCte} ev as (
        insert into cost_events (id, squad_id, agent_id, issue_id, project_id, provider, biller, billing_type, model,
                                 input_tokens, cached_input_tokens, output_tokens, cost_cents, billing_code, occurred_at, cache_write_tokens, cost_status)
        ${events}
        returning id, created_at, squad_id, occurred_at, provider, model, billing_type, cost_status,
                  cost_cents, input_tokens, cached_input_tokens, output_tokens, cache_write_tokens
      ), up as (
        insert into cost_rollups as r (squad_id, period, scope, scope_key, cost_cents, input_tokens, cached_input_tokens, output_tokens, subscription_tokens, events,
                                       cache_write_tokens, unpriced_tokens)
        ${values}
        on conflict (squad_id, period, scope, scope_key) do update set
          cost_cents = r.cost_cents + excluded.cost_cents,
          input_tokens = r.input_tokens + excluded.input_tokens,
          cached_input_tokens = r.cached_input_tokens + excluded.cached_input_tokens,
          output_tokens = r.output_tokens + excluded.output_tokens,
          subscription_tokens = r.subscription_tokens + excluded.subscription_tokens,
          events = r.events + excluded.events,
          cache_write_tokens = r.cache_write_tokens + excluded.cache_write_tokens,
          unpriced_tokens = r.unpriced_tokens + excluded.unpriced_tokens
        returning squad_id, period, scope, scope_key, ${rollupColumns}
      ), dy as (
        insert into cost_day_rollups as d (squad_id, day, provider, model, billing_type, cost_cents, input_tokens, cached_input_tokens, output_tokens,
                                           subscription_tokens, events, cache_write_tokens, unpriced_tokens)
        select squad_id, (occurred_at at time zone 'UTC')::date, provider, model, billing_type, ${totalsSelect}
          from ev group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5
        on conflict (squad_id, day, provider, model, billing_type) do update set
          cost_cents = d.cost_cents + excluded.cost_cents,
          input_tokens = d.input_tokens + excluded.input_tokens,
          cached_input_tokens = d.cached_input_tokens + excluded.cached_input_tokens,
          output_tokens = d.output_tokens + excluded.output_tokens,
          subscription_tokens = d.subscription_tokens + excluded.subscription_tokens,
          events = d.events + excluded.events,
          cache_write_tokens = d.cache_write_tokens + excluded.cache_write_tokens,
          unpriced_tokens = d.unpriced_tokens + excluded.unpriced_tokens
      )
      select 'rollup' as "row", up.squad_id::text as "ref", up.period, up.scope, up.scope_key as "key", up."costCents", up."inputTokens",
             up."cachedInputTokens", up."outputTokens", up."subscriptionTokens", up.events, up."cacheWriteTokens", up."unpricedTokens",
             null::text as "id", null::timestamptz as "createdAt", null::int8 as "tokens"
        from up
      union all select 'event', null, null, null, null, null, null, null, null, null, null, null, null, ev.id::text, ev.created_at, null from ev
      union all select 'squad', id::text, null, null, null, null, null, null, null, null, null, null, null, null, null, budget_monthly_tokens
        from squads where id in (${sql.join(squadIds)})
      union all select 'agent', id::text, null, null, null, null, null, null, null, null, null, null, null, null, null, budget_monthly_tokens
        from agents where id in (${sql.join(agentIds)})`.execute(this.db().withoutPlugins())
    const after = new Map<string, CostTotals>()
    const createdAt = new Map<string, Date>()
    const squadTokens = new Map<string, number | null>()
    const agentTokens = new Map<string, number | null>()
    const num = (v: unknown) => (v == null ? null : Number(v))
    for (const r of rows) {
      if (r.row === 'rollup') after.set(rollupId(String(r.ref), { scope: r.scope as RollupScope, key: String(r.key), period: String(r.period) }), totalsFrom(r))
      else if (r.row === 'event') createdAt.set(String(r.id), r.createdAt as Date)
      else if (r.row === 'squad') squadTokens.set(String(r.ref), num(r.tokens))
      else agentTokens.set(String(r.ref), num(r.tokens))
    }
    // The guard held: nothing was written.
    if (guarded && createdAt.size < entries.length) return null
    // Totals right after each event: start from the totals before the batch and add event by event.
    const running = new Map<string, CostTotals>()
    for (const [id, sum] of sums) {
      const before = { ...after.get(id)! }
      for (const f of totalFields) before[f] -= sum.delta[f]
      running.set(id, before)
    }
    return entries.map((x) => ({
      event: { ...x.event, createdAt: createdAt.get(x.event.id)! },
      totals: x.keys.map((k) => {
        const t = running.get(rollupId(x.event.squadId, k))!
        for (const f of totalFields) t[f] += x.delta[f]
        return { ...k, ...t }
      }),
      tokenLimits: { squad: squadTokens.get(x.event.squadId) ?? null, agent: agentTokens.get(x.event.agentId) ?? null },
    }))
  }

  async rollups(squadId: string, period: Period, scope: RollupScope, keys?: string[]): Promise<Array<{ key: string } & CostTotals>> {
    if (keys && !keys.length) return []
    const only = keys ? sql`and scope_key in (${sql.join(keys)})` : sql``
    const { rows } = await sql<Record<string, unknown>>`
      select scope_key as "key", ${rollupColumns} from cost_rollups
       where squad_id = ${squadId} and period = ${period} and scope = ${scope} ${only}`.execute(this.db())
    return rows.map((r) => ({ key: String(r.key), ...totalsFrom(r) }))
  }

  async deleteRollups(squadId: string, scope: RollupScope, key: string): Promise<void> {
    await this.db().deleteFrom('costRollups').where('squadId', '=', squadId).where('scope', '=', scope).where('scopeKey', '=', key).execute()
  }

  async issueTotals(issueId: string): Promise<CostTotals> {
    const { rows } = await sql<Record<string, unknown>>`select ${totalsSelect} from cost_events where issue_id = ${issueId}`.execute(this.db())
    return totalsFrom(rows[0])
  }

  async windowSpend(squadId: string, since: Date[], until: Date): Promise<Array<{ provider: string; windows: CostTotals[] }>> {
    if (!since.length) return []
    const earliest = new Date(Math.min(...since.map((d) => d.getTime())))
    const columns = sql.join(
      since.map((s, i) => {
        const f = sql`occurred_at >= ${s}`
        const as = (field: string) => sql.raw(`"w${i}${field}"`)
        return sql`coalesce(sum(cost_cents) filter (where ${f}), 0)::int8 as ${as('CostCents')},
          coalesce(sum(input_tokens) filter (where ${f}), 0)::int8 as ${as('InputTokens')},
          coalesce(sum(cached_input_tokens) filter (where ${f}), 0)::int8 as ${as('CachedInputTokens')},
          coalesce(sum(output_tokens) filter (where ${f}), 0)::int8 as ${as('OutputTokens')},
          coalesce(sum(${subscriptionTokensExpr}) filter (where ${f}), 0)::int8 as ${as('SubscriptionTokens')},
          count(*) filter (where ${f}) as ${as('Events')},
          coalesce(sum(cache_write_tokens) filter (where ${f}), 0)::int8 as ${as('CacheWriteTokens')},
          coalesce(sum(${unpricedTokensExpr}) filter (where ${f}), 0)::int8 as ${as('UnpricedTokens')}`
      }),
    )
    // An index-only range scan of cost_events_window (squad, time, then the summed columns).
    const { rows } = await sql<Record<string, unknown>>`
      select provider, ${columns} from cost_events
       where squad_id = ${squadId} and occurred_at >= ${earliest} and occurred_at <= ${until}
       group by provider order by provider`.execute(this.db())
    return rows.map((r) => ({ provider: String(r.provider), windows: since.map((_, i) => totalsFrom(r, `w${i}`)) }))
  }

  async dailyTotals(squadId: string, from: Date, until: Date): Promise<Array<{ day: string } & CostTotals>> {
    const span = daySpan(squadId, from, until)
    if (!span) return []
    const { rows } = await sql<Record<string, unknown>>`
      select to_char(s.day::timestamp, 'YYYY-MM-DD') as "day", ${spanTotals} from (${span}) s group by s.day order by s.day`.execute(this.db())
    return rows.map((r) => ({ day: String(r.day), ...totalsFrom(r) }))
  }

  async modelTotals(squadId: string, from: Date, until: Date): Promise<Array<{ provider: string; model: string; billingType: BillingType } & CostTotals>> {
    const span = daySpan(squadId, from, until)
    if (!span) return []
    const { rows } = await sql<Record<string, unknown>>`
      select provider, model, billing_type as "billingType", ${spanTotals} from (${span}) s group by provider, model, billing_type`.execute(this.db())
    return rows.map((r) => ({ provider: String(r.provider), model: String(r.model), billingType: r.billingType as BillingType, ...totalsFrom(r) }))
  }
}
