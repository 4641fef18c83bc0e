import { sql, type Kysely } from 'kysely'
import type { ActivityEntry, CostRepository, CostTotals, NewCostEvent, NewOutboxEntry, Period, RecordedCost, RollupKey, RollupScope } from '@slaw/core'
import { activityInsert, outboxInsert } from './activity.js'
import type { Database } from '../schema.js'

const zero = (): CostTotals => ({ costCents: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, subscriptionTokens: 0, events: 0 })

/** Tokens a token ceiling counts: every token of a subscription-billed event. */
const subscriptionTokensExpr = sql`case when billing_type <> 'metered_api' then input_tokens + cached_input_tokens + output_tokens else 0 end`

/** sum() over int8 is numeric; cast back so the driver hands out JS numbers. */
const totalsSelect = sql`coalesce(sum(cost_cents), 0)::int8 as "costCents",
  coalesce(sum(input_tokens), 0)::int8 as "inputTokens",
  coalesce(sum(cached_input_tokens), 0)::int8 as "cachedInputTokens",
  coalesce(sum(output_tokens), 0)::int8 as "outputTokens",
  coalesce(sum(${subscriptionTokensExpr}), 0)::int8 as "subscriptionTokens",
  count(*) as "events"`

const totalFields = ['costCents', 'inputTokens', 'cachedInputTokens', 'outputTokens', 'subscriptionTokens', 'events'] as const

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

const rollupColumns = sql`cost_cents as "costCents", input_tokens as "inputTokens", cached_input_tokens as "cachedInputTokens",
  output_tokens as "outputTokens", subscription_tokens as "subscriptionTokens", events`

export class PgCostRepository implements CostRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async record(e: NewCostEvent, keys: RollupKey[], d: CostTotals, alongside: { activity?: ActivityEntry[]; outbox?: NewOutboxEntry[] } = {}): Promise<RecordedCost> {
    if (!keys.length) throw new TypeError('record: at least one rollup key')
    const activity = alongside.activity ?? []
    const outbox = alongside.outbox ?? []
    // Optional CTEs; data-modifying CTEs run whether or not the query reads them.
    const activityCte = activity.length ? sql`act as (${activityInsert(activity)}),` : sql``
    const outboxCte = outbox.length ? sql`ob as (${outboxInsert(outbox)}),` : sql``
    // VALUES rows are inserted (and their rows locked) in the order given.
    const values = sql.join(
      keys.map((k) => sql`(${e.squadId}::uuid, ${k.period}, ${k.scope}, ${k.key}, ${d.costCents}::int8, ${d.inputTokens}::int8, ${d.cachedInputTokens}::int8, ${d.outputTokens}::int8, ${d.subscriptionTokens}::int8, ${d.events}::int8)`),
    )
    // One round trip: the activity entry and outbox rows, the event, its rollups, and the ceilings
    // the budget check needs next.
    const { rows } = await sql<Record<string, unknown>>`
      with ${activityCte} ${outboxCte} ev as (
        insert into cost_events (id, squad_id, agent_id, issue_id, project_id, provider, biller, billing_type, model,
                                 input_tokens, cached_input_tokens, output_tokens, cost_cents, billing_code, occurred_at)
        values (${e.id}, ${e.squadId}, ${e.agentId}, ${e.issueId}, ${e.projectId}, ${e.provider}, ${e.biller}, ${e.billingType}, ${e.model},
                ${e.inputTokens}, ${e.cachedInputTokens}, ${e.outputTokens}, ${e.costCents}, ${e.billingCode}, ${e.occurredAt})
        returning created_at
      ), up as (
        insert into cost_rollups as r (squad_id, period, scope, scope_key, cost_cents, input_tokens, cached_input_tokens, output_tokens, subscription_tokens, events)
        values ${values}
        on conflict (squad_id, period, scope, scope_key) do update set
          cost_cents = r.cost_cents + excluded.cost_cents,
          input_tokens = r.input_tokens + excluded.input_tokens,
          cached_input_tokens = r.cached_input_tokens + excluded.cached_input_tokens,
          output_tokens = r.output_tokens + excluded.output_tokens,
          subscription_tokens = r.subscription_tokens + excluded.subscription_tokens,
          events = r.events + excluded.events
        returning period, scope, scope_key, ${rollupColumns}
      )
      select up.period, up.scope, up.scope_key as "key", up."costCents", up."inputTokens", up."cachedInputTokens", up."outputTokens", up."subscriptionTokens", up.events,
             (select created_at from ev) as "createdAt",
             (select budget_monthly_tokens from squads where id = ${e.squadId}) as "squadTokens",
             (select budget_monthly_tokens from agents where id = ${e.agentId}) as "agentTokens"
        from up`.execute(this.db())
    const first = rows[0] ?? {}
    const num = (v: unknown) => (v == null ? null : Number(v))
    return {
      event: { ...e, createdAt: first.createdAt as Date },
      totals: rows.map((r) => ({ period: String(r.period), scope: r.scope as RollupScope, key: String(r.key), ...totalsFrom(r) })),
      tokenLimits: { squad: num(first.squadTokens), agent: num(first.agentTokens) },
    }
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
          count(*) filter (where ${f}) as ${as('Events')}`
      }),
    )
    // An index-only range scan of cost_events_window (squad, time, then the summed columns).
    const { rows } = await sql<Record<string, unknown>>`
      select provider, ${columns} from cost_events
       where squad_id = ${squadId} and occurred_at >= ${earliest} and occurred_at <= ${until}
       group by provider order by provider`.execute(this.db())
    return rows.map((r) => ({ provider: String(r.provider), windows: since.map((_, i) => totalsFrom(r, `w${i}`)) }))
  }
}
