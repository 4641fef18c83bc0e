import { useQuery } from '@tanstack/react-query'
import { MonthSpendChart } from '../components/Charts'
import { DataTable, type Column } from '../components/DataTable'
import { Empty, PageTitle, Query, Section, Stat } from '../components/ui'
import { unwrap } from '../lib/api'
import { count, money, percent, tokens, words } from '../lib/format'
import { href } from '../lib/router'
import { useBudgets, useCostsByDay } from '../queries'
import { useApi } from '../state'

/** The figures every cost row carries (docs/costs-and-budgets.md): metered, subscription and unpriced apart. */
interface CostFigures {
  costCents: number
  inputTokens: number
  cachedInputTokens: number
  cacheWriteTokens: number
  outputTokens: number
  subscriptionTokens: number
  unpricedTokens: number
  events: number
}

/** Metered spend and tokens, then subscription and unpriced tokens, after the row's own columns. */
export function costColumns<T extends CostFigures>(): Column<T>[] {
  return [
    { header: 'Metered', num: true, cell: (r) => money(r.costCents) },
    { header: 'Tokens', num: true, cell: (r) => tokens(r.inputTokens + r.cachedInputTokens + r.outputTokens), title: (r) => `${r.inputTokens} in · ${r.cachedInputTokens} cached · ${r.outputTokens} out` },
    { header: 'Subscription', num: true, cell: (r) => tokens(r.subscriptionTokens) },
    { header: 'Unpriced', num: true, cell: (r) => tokens(r.unpricedTokens) },
  ]
}

export function CostsPage({ squadId }: { squadId: string }) {
  const api = useApi()
  const path = { params: { path: { squadId } } }
  const summary = useQuery({ queryKey: ['squad', squadId, 'costs', 'summary'], queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/costs/summary', path)).summary })
  const byAgent = useQuery({ queryKey: ['squad', squadId, 'costs', 'by-agent'], queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/costs/by-agent', path)) })
  const byModel = useQuery({ queryKey: ['squad', squadId, 'costs', 'by-model'], queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/costs/by-model', path)) })
  const byProvider = useQuery({ queryKey: ['squad', squadId, 'costs', 'by-provider'], queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/costs/by-provider', path)) })
  const byDay = useCostsByDay(squadId)
  const windows = useQuery({ queryKey: ['squad', squadId, 'costs', 'windows'], queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/costs/window-spend', path)).windows })
  const budgets = useBudgets(squadId)
  return (
    <>
      <PageTitle>Costs</PageTitle>
      <Query query={summary} label="the month's costs">
        {(s) => (
          <div className="stats" aria-label="Month to date">
            <Stat label={`Metered spend, ${s.month}`} value={money(s.costCents)} hint={`${count(s.events)} cost events`} />
            <Stat label="Metered tokens" value={tokens(s.inputTokens + s.cachedInputTokens + s.cacheWriteTokens + s.outputTokens)} hint={`${tokens(s.inputTokens)} in · ${tokens(s.cachedInputTokens)} cached · ${tokens(s.cacheWriteTokens)} cache writes · ${tokens(s.outputTokens)} out`} />
            <Stat label="Subscription tokens" value={tokens(s.subscriptionTokens)} hint="covered by a subscription, no per-token price" />
            <Stat label="Unpriced tokens" value={tokens(s.unpricedTokens)} hint="usage with no known price: not in the spend" tone={s.unpricedTokens ? 'warn' : undefined} />
          </div>
        )}
      </Query>
      <div className="grid2">
        <Section title="By agent, this month">
          <Query query={byAgent} label="costs by agent">
            {(d) =>
              d.agents.length === 0 ? (
                <Empty title="No agent has spent anything this month." />
              ) : (
                <DataTable
                  caption="Costs by agent"
                  rows={d.agents}
                  rowKey={(a) => a.agentId}
                  columns={[{ header: 'Agent', cell: (a) => (a.name ? <a href={href({ name: 'agent', squadId, id: a.agentId })}>{a.name}</a> : 'a removed agent') }, ...costColumns<(typeof d.agents)[number]>()]}
                />
              )
            }
          </Query>
        </Section>
        <Section title="By provider, this month">
          <Query query={byProvider} label="costs by provider">
            {(d) =>
              d.providers.length === 0 ? (
                <Empty title="No provider costs this month." />
              ) : (
                <DataTable caption="Costs by provider" rows={d.providers} rowKey={(p) => p.provider} columns={[{ header: 'Provider', cell: (p) => p.provider }, ...costColumns<(typeof d.providers)[number]>()]} />
              )
            }
          </Query>
        </Section>
      </div>
      <Section title="By model, this month">
        <Query query={byModel} label="costs by model">
          {(d) =>
            d.models.length === 0 ? (
              <Empty title="No model was used this month.">Agents report each model call's usage as a cost event; it shows here by model and billing.</Empty>
            ) : (
              <DataTable
                caption="Costs by model"
                rows={d.models}
                rowKey={(m) => `${m.provider}/${m.model}/${m.billingType}`}
                columns={[
                  { header: 'Model', cell: (m) => m.model, className: 'mono small' },
                  { header: 'Provider', cell: (m) => m.provider },
                  { header: 'Billing', cell: (m) => words(m.billingType) },
                  ...costColumns<(typeof d.models)[number]>(),
                ]}
              />
            )
          }
        </Query>
      </Section>
      <Section title="By day, this month">
        <Query query={byDay} label="costs by day">
          {(d) => (
            <>
              <MonthSpendChart month={d.month} days={d.days} budgetCents={budgets.data?.squad.budgetMonthlyCents ?? null} />
              <DataTable
                caption="Costs by day"
                rows={[...d.days].reverse()}
                rowKey={(r) => r.day}
                columns={[
                  { header: 'Day (UTC)', cell: (r) => r.day, className: 'num' },
                  { header: 'Metered', num: true, cell: (r) => money(r.costCents) },
                  { header: 'Input', num: true, cell: (r) => tokens(r.inputTokens) },
                  { header: 'Cached', num: true, cell: (r) => tokens(r.cachedInputTokens) },
                  { header: 'Output', num: true, cell: (r) => tokens(r.outputTokens) },
                  { header: 'Subscription', num: true, cell: (r) => tokens(r.subscriptionTokens) },
                  { header: 'Unpriced', num: true, cell: (r) => tokens(r.unpricedTokens) },
                ]}
              />
            </>
          )}
        </Query>
      </Section>
      <div className="grid2">
        <Section title="Rolling windows">
          <Query query={windows} label="rolling windows">
            {(ws) => (
              <DataTable
                caption="Rolling windows"
                rows={ws}
                rowKey={(w) => w.window}
                columns={[
                  { header: 'Window', cell: (w) => `last ${w.window}` },
                  { header: 'Spend', num: true, cell: (w) => money(w.costCents) },
                  { header: 'Tokens', num: true, cell: (w) => tokens(w.inputTokens + w.cachedInputTokens + w.outputTokens) },
                  { header: 'Events', num: true, cell: (w) => count(w.events) },
                ]}
              />
            )}
          </Query>
        </Section>
        <Section title="Budgets">
          <Query query={budgets} label="budgets">
            {(b) => (
              <>
                <p>
                  Squad: {b.squad.budgetMonthlyCents === null ? 'no month budget' : `${money(b.squad.spentMonthlyCents)} of ${money(b.squad.budgetMonthlyCents)} (${percent(b.squad.percentUsed)})`}
                  {b.squad.budgetHardStop ? ' · hard stop' : ''}
                </p>
                {b.agents.length ? (
                  <DataTable
                    caption="Agent budgets"
                    rows={b.agents}
                    rowKey={(a) => a.agentId}
                    columns={[
                      {
                        header: 'Agent',
                        cell: (a) => (
                          <>
                            <a href={href({ name: 'agent', squadId, id: a.agentId })}>{a.name}</a> {a.status === 'paused' ? <span className="muted small">paused{a.pauseReason ? ` (${a.pauseReason})` : ''}</span> : null}
                          </>
                        ),
                      },
                      { header: 'Spent', num: true, cell: (a) => money(a.spentMonthlyCents) },
                      { header: 'Budget', num: true, cell: (a) => (a.budgetMonthlyCents === null ? 'none' : money(a.budgetMonthlyCents)) },
                      { header: 'Used', num: true, cell: (a) => (a.budgetMonthlyCents === null ? '—' : percent(a.percentUsed)) },
                    ]}
                  />
                ) : null}
                {b.incidents.length ? (
                  <ul className="plain">
                    {b.incidents.map((i) => (
                      <li key={i.id} className="warn">
                        {words(i.level)} threshold: {words(i.scopeType)} {i.metric === 'tokens' ? `${tokens(i.observedAmount)} of ${tokens(i.limitAmount)} tokens` : `${money(i.observedAmount)} of ${money(i.limitAmount)}`}
                      </li>
                    ))}
                  </ul>
                ) : (
                  <p className="muted small">No budget threshold crossed this period.</p>
                )}
              </>
            )}
          </Query>
        </Section>
      </div>
    </>
  )
}
