import type { HeartbeatRun } from '@slaw/client'
import { MonthSpendChart, RunsChart } from '../components/Charts'
import { LiveOutput } from '../components/LiveOutput'
import { Empty, ErrorBox, PageTitle, Query, Section, Stat, Status } from '../components/ui'
import { needsAttention, type AttentionItem } from '../lib/attention'
import { ago, count, duration, money, percent, tokens } from '../lib/format'
import { href } from '../lib/router'
import { useAgentName, useApprovals, useBudgets, useCostsByDay, useDashboard, useIssues, useRuns } from '../queries'

export function OverviewPage({ squadId }: { squadId: string }) {
  const dashboard = useDashboard(squadId)
  return (
    <>
      <PageTitle>Overview</PageTitle>
      <Query query={dashboard} label="the overview">
        {(d) => (
          <>
            <div className="stats" aria-label="Squad figures">
              <Stat label="Agents running" value={count(d.agents.running)} hint={`${count(d.agents.active)} active · ${count(d.agents.paused)} paused · ${count(d.agents.error)} in error`} />
              <Stat label="Issues in progress" value={count(d.tasks.inProgress)} hint={`${count(d.tasks.open)} open · ${count(d.tasks.done)} done`} />
              <Stat label="Blocked issues" value={count(d.tasks.blocked)} tone={d.tasks.blocked ? 'warn' : undefined} />
              <Stat label="Pending approvals" value={count(d.pendingApprovals)} tone={d.pendingApprovals ? 'warn' : undefined} />
              <Stat
                label="Month spend"
                value={money(d.costs.monthSpendCents)}
                hint={d.costs.monthBudgetCents === null ? 'no budget set' : `of ${money(d.costs.monthBudgetCents)} (${percent(d.costs.monthUtilizationPercent)})`}
                tone={d.costs.monthBudgetCents !== null && d.costs.monthUtilizationPercent >= 100 ? 'bad' : d.costs.monthUtilizationPercent >= 80 ? 'warn' : undefined}
              />
              <Stat
                label="Month tokens"
                value={tokens(d.costs.monthInputTokens + d.costs.monthCachedInputTokens + d.costs.monthCacheWriteTokens + d.costs.monthOutputTokens)}
                hint={`${tokens(d.costs.monthInputTokens)} in · ${tokens(d.costs.monthCachedInputTokens)} cached · ${tokens(d.costs.monthOutputTokens)} out · ${tokens(d.costs.monthUnpricedTokens)} unpriced`}
                tone={d.costs.monthUnpricedTokens ? 'warn' : undefined}
              />
            </div>
            <div className="grid2">
              <Attention squadId={squadId} />
              <LiveRuns squadId={squadId} />
            </div>
            <div className="grid2">
              <Section title="Runs, last 14 days">
                <RunsChart activity={d.runActivity} />
              </Section>
              <Spend squadId={squadId} budgetCents={d.costs.monthBudgetCents} unpricedTokens={d.costs.monthUnpricedTokens} />
            </div>
          </>
        )}
      </Query>
    </>
  )
}

function Spend({ squadId, budgetCents, unpricedTokens }: { squadId: string; budgetCents: number | null; unpricedTokens: number }) {
  const days = useCostsByDay(squadId)
  return (
    <Section title="Spend by day against the month budget">
      <Query query={days} label="spend by day">
        {(d) => (
          <>
            <MonthSpendChart month={d.month} days={d.days} budgetCents={budgetCents} />
            {unpricedTokens ? <p className="muted small">{`${tokens(unpricedTokens)} unpriced tokens this month are not in these figures.`}</p> : null}
          </>
        )}
      </Query>
    </Section>
  )
}

function Attention({ squadId }: { squadId: string }) {
  const failed = useRuns(squadId, { status: ['failed', 'timed_out'], limit: 10 })
  const blocked = useIssues(squadId, { status: 'blocked', limit: 20 })
  const approvals = useApprovals(squadId, 'pending')
  const budgets = useBudgets(squadId)
  const agentName = useAgentName(squadId)
  const pending = failed.isPending || blocked.isPending || approvals.isPending || budgets.isPending
  const error = failed.error ?? blocked.error ?? approvals.error ?? budgets.error
  // A failure older than a day has been seen or superseded; the Runs page keeps the whole history.
  const since = Date.now() - 24 * 3600_000
  const items = needsAttention({
    failedRuns: (failed.data?.runs ?? []).filter((r) => Date.parse(r.finishedAt ?? r.createdAt) >= since),
    blockedIssues: blocked.data ?? [],
    pendingApprovals: approvals.data ?? [],
    budgets: budgets.data,
    agentName,
  })
  return (
    <Section title="Needs attention">
      {pending ? (
        <p className="muted">Loading…</p>
      ) : error ? (
        <ErrorBox error={error} />
      ) : items.length === 0 ? (
        <Empty title="Nothing needs you right now.">Runs that failed in the last day, blocked issues, pending approvals and budget warnings show up here as they happen.</Empty>
      ) : (
        <ul className="attention">
          {items.map((item) => (
            <li key={`${item.kind}-${item.id}`} className={`att-${item.kind}`}>
              <span className="att-kind">{item.kind}</span>
              <a data-row href={targetHref(squadId, item)}>
                {item.title}
              </a>
              <div className="muted small">{item.reason}</div>
            </li>
          ))}
        </ul>
      )}
    </Section>
  )
}

function targetHref(squadId: string, item: AttentionItem): string {
  switch (item.target.kind) {
    case 'run':
      return href({ name: 'run', squadId, id: item.target.id })
    case 'issue':
      return href({ name: 'issue', squadId, id: item.target.id })
    case 'agent':
      return href({ name: 'agent', squadId, id: item.target.id })
    case 'approval':
      return href({ name: 'approvals', squadId })
    case 'costs':
      return href({ name: 'costs', squadId })
  }
}

function LiveRuns({ squadId }: { squadId: string }) {
  const runs = useRuns(squadId, { status: ['running', 'queued'], limit: 20 })
  const agentName = useAgentName(squadId)
  const running = runs.data?.runs.filter((r) => r.status === 'running').length ?? 0
  const queued = (runs.data?.runs.length ?? 0) - running
  return (
    <Section
      title="Runs in flight"
      actions={runs.data ? <span className="muted small num">{`${running} running · ${queued} queued${runs.data.nextCursor ? ' (first 20 shown)' : ''}`}</span> : null}
    >
      <Query query={runs} label="runs">
        {(r) =>
          r.runs.length === 0 ? (
            <Empty title="No run is going.">Wake an agent from its page, or assign it an issue, and its run shows here with live output.</Empty>
          ) : (
            <div className="run-cards">
              {r.runs.map((run) => (
                <RunCard key={run.id} squadId={squadId} run={run} agent={agentName(run.agentId)} />
              ))}
            </div>
          )
        }
      </Query>
    </Section>
  )
}

function RunCard({ squadId, run, agent }: { squadId: string; run: HeartbeatRun; agent: string }) {
  return (
    <article className="run-card" aria-label={`Run of ${agent}`}>
      <div className="run-card-head">
        <a data-row href={href({ name: 'run', squadId, id: run.id })}>
          {agent}
        </a>
        <Status value={run.status} />
        <span className="muted num small">{run.startedAt ? duration(run.startedAt, null) : `queued ${ago(run.createdAt)}`}</span>
      </div>
      <div className="muted small">{run.reason}</div>
      {run.status === 'running' ? <LiveOutput runId={run.id} compact /> : null}
    </article>
  )
}
