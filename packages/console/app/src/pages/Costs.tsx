import { useQuery } from '@tanstack/react-query'
import { Empty, PageTitle, Query, Section, Stat } from '../components/ui'
import { unwrap } from '../lib/api'
import { count, money, percent, tokens, words } from '../lib/format'
import { href } from '../lib/router'
import { useBudgets } from '../queries'
import { useApi } from '../state'

export function CostsPage({ squadId }: { squadId: string }) {
  const api = useApi()
  const path = { params: { path: { squadId } } }
  const summary = useQuery({ queryKey: ['squad', squadId, 'costs', 'summary'], queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/costs/summary', path)).summary })
  const byAgent = useQuery({ queryKey: ['squad', squadId, 'costs', 'by-agent'], queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/costs/by-agent', path)) })
  const byProvider = useQuery({ queryKey: ['squad', squadId, 'costs', 'by-provider'], queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/costs/by-provider', path)) })
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
                <CostTable
                  first="Agent"
                  rows={d.agents.map((a) => ({
                    key: a.agentId,
                    label: a.name ? <a href={href({ name: 'agent', squadId, id: a.agentId })}>{a.name}</a> : 'a removed agent',
                    ...a,
                  }))}
                />
              )
            }
          </Query>
        </Section>
        <Section title="By provider, this month">
          <Query query={byProvider} label="costs by provider">
            {(d) => (d.providers.length === 0 ? <Empty title="No provider costs this month." /> : <CostTable first="Provider" rows={d.providers.map((p) => ({ key: p.provider, label: p.provider, ...p }))} />)}
          </Query>
        </Section>
      </div>
      <div className="grid2">
        <Section title="Rolling windows">
          <Query query={windows} label="rolling windows">
            {(ws) => (
              <div className="table-wrap">
                <table className="table">
                  <thead>
                    <tr>
                      <th scope="col">Window</th>
                      <th scope="col" className="num">
                        Spend
                      </th>
                      <th scope="col" className="num">
                        Tokens
                      </th>
                      <th scope="col" className="num">
                        Events
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {ws.map((w) => (
                      <tr key={w.window}>
                        <td>last {w.window}</td>
                        <td className="num">{money(w.costCents)}</td>
                        <td className="num">{tokens(w.inputTokens + w.cachedInputTokens + w.outputTokens)}</td>
                        <td className="num">{count(w.events)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
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
                  <div className="table-wrap">
                    <table className="table">
                      <thead>
                        <tr>
                          <th scope="col">Agent</th>
                          <th scope="col" className="num">
                            Spent
                          </th>
                          <th scope="col" className="num">
                            Budget
                          </th>
                          <th scope="col" className="num">
                            Used
                          </th>
                        </tr>
                      </thead>
                      <tbody>
                        {b.agents.map((a) => (
                          <tr key={a.agentId}>
                            <td>
                              <a href={href({ name: 'agent', squadId, id: a.agentId })}>{a.name}</a> {a.status === 'paused' ? <span className="muted small">paused{a.pauseReason ? ` (${a.pauseReason})` : ''}</span> : null}
                            </td>
                            <td className="num">{money(a.spentMonthlyCents)}</td>
                            <td className="num">{a.budgetMonthlyCents === null ? 'none' : money(a.budgetMonthlyCents)}</td>
                            <td className="num">{a.budgetMonthlyCents === null ? '—' : percent(a.percentUsed)}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  </div>
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
      <p className="muted small">The API reports spend by agent and by provider; it has no per-model or per-day breakdown, so none is shown.</p>
    </>
  )
}

interface CostRow {
  key: string
  label: React.ReactNode
  costCents: number
  inputTokens: number
  cachedInputTokens: number
  outputTokens: number
  subscriptionTokens: number
  unpricedTokens: number
  events: number
}

function CostTable({ first, rows }: { first: string; rows: CostRow[] }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">{first}</th>
            <th scope="col" className="num">
              Metered
            </th>
            <th scope="col" className="num">
              Tokens
            </th>
            <th scope="col" className="num">
              Subscription
            </th>
            <th scope="col" className="num">
              Unpriced
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.key}>
              <td>{r.label}</td>
              <td className="num">{money(r.costCents)}</td>
              <td className="num">{tokens(r.inputTokens + r.cachedInputTokens + r.outputTokens)}</td>
              <td className="num">{tokens(r.subscriptionTokens)}</td>
              <td className="num">{tokens(r.unpricedTokens)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
