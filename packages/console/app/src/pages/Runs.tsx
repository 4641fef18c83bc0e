import type { HeartbeatRun } from '@slaw/client'
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { DataTable, type Column } from '../components/DataTable'
import { LiveOutput } from '../components/LiveOutput'
import { Empty, ErrorBox, PageTitle, Query, Section, Status } from '../components/ui'
import { unwrap } from '../lib/api'
import { ago, count, duration, exactTime, runCost, words } from '../lib/format'
import { href, navigate, useLocation } from '../lib/router'
import { useAgentName } from '../queries'
import { useApi } from '../state'

const runStatuses = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out'] as const
type RunStatus = (typeof runStatuses)[number]

export function RunsPage({ squadId }: { squadId: string }) {
  const { query } = useLocation()
  const status = query.get('status') ?? ''
  const picked = runStatuses.filter((s) => s === status)
  const api = useApi()
  // Pages of 100, newest first, read on with the API's cursor.
  const runs = useInfiniteQuery({
    queryKey: ['squad', squadId, 'runs', 'pages', status],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET('/api/squads/{squadId}/heartbeat-runs', {
          params: { path: { squadId }, query: { ...(picked.length ? { status: picked.join(',') } : {}), ...(pageParam ? { cursor: pageParam } : {}), limit: 100 } },
        }),
      ),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  })
  const agentName = useAgentName(squadId)
  return (
    <>
      <PageTitle>Runs</PageTitle>
      <div className="filters">
        <label>
          Status
          <select value={status} onChange={(e) => navigate(href({ name: 'runs', squadId }, { status: e.target.value }), true)}>
            <option value="">Any</option>
            {runStatuses.map((s) => (
              <option key={s} value={s}>
                {words(s)}
              </option>
            ))}
          </select>
        </label>
      </div>
      <Query query={runs} label="runs">
        {(r) => {
          const all = r.pages.flatMap((p) => p.runs)
          return all.length === 0 ? (
            <Empty title="No runs yet.">Runs start when an agent is woken: from its page (Wake now), by an assigned issue, or by a routine.</Empty>
          ) : (
            <>
              <RunTable squadId={squadId} runs={all} agentName={agentName} />
              {runs.hasNextPage ? (
                <button type="button" className="ghost" onClick={() => void runs.fetchNextPage()} disabled={runs.isFetchingNextPage}>
                  {runs.isFetchingNextPage ? 'Loading…' : 'Older runs'}
                </button>
              ) : null}
            </>
          )
        }}
      </Query>
    </>
  )
}

export function RunTable({ squadId, runs, agentName }: { squadId: string; runs: HeartbeatRun[]; agentName?: (id: string) => string }) {
  const columns: Column<HeartbeatRun>[] = [
    {
      header: 'Run',
      cell: (r) => (
        <a data-row href={href({ name: 'run', squadId, id: r.id })} title={exactTime(r.createdAt)}>
          {ago(r.createdAt)}
        </a>
      ),
    },
    ...(agentName ? [{ header: 'Agent', cell: (r: HeartbeatRun) => agentName(r.agentId) }] : []),
    { header: 'Status', cell: (r) => <Status value={r.status} /> },
    { header: 'Reason', cell: (r) => words(r.reason) },
    { header: 'Duration', cell: (r) => duration(r.startedAt, r.finishedAt), num: true },
    { header: 'Cost', cell: (r) => runCost(r.usage), num: true },
    { header: 'Error', cell: (r) => r.errorCode ?? '', className: 'small' },
  ]
  return <DataTable caption="Runs" rows={runs} rowKey={(r) => r.id} columns={columns} />
}

export function RunPage({ squadId, id }: { squadId: string; id: string }) {
  const api = useApi()
  const queryClient = useQueryClient()
  const run = useQuery({ queryKey: ['run', id], queryFn: async () => unwrap(await api.GET('/api/heartbeat-runs/{runId}', { params: { path: { runId: id } } })).run })
  const agentName = useAgentName(squadId)
  const cancel = useMutation({
    mutationFn: async () => unwrap(await api.POST('/api/heartbeat-runs/{runId}/cancel', { params: { path: { runId: id } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['run', id] }),
  })
  return (
    <Query query={run} label="the run">
      {(r) => (
        <>
          <PageTitle
            actions={
              r.status === 'running' || r.status === 'queued' ? (
                <button type="button" className="bad" onClick={() => cancel.mutate()} disabled={cancel.isPending}>
                  Cancel run
                </button>
              ) : null
            }
          >
            Run of <a href={href({ name: 'agent', squadId, id: r.agentId })}>{agentName(r.agentId)}</a> <Status value={r.status} />
          </PageTitle>
          {cancel.error ? <ErrorBox error={cancel.error} /> : null}
          <div className="grid2 wide-left">
            <Section title="Output">
              <LiveOutput runId={r.id} finishedTail={r.outputTail ?? null} />
            </Section>
            <div>
              <Section title="Run">
                <dl className="facts">
                  <dt>Reason</dt>
                  <dd>{words(r.reason)}</dd>
                  <dt>Issue</dt>
                  <dd>{r.issueId ? <a href={href({ name: 'issue', squadId, id: r.issueId })}>open the issue</a> : 'none'}</dd>
                  <dt>Started</dt>
                  <dd title={exactTime(r.startedAt)}>{r.startedAt ? ago(r.startedAt) : 'not yet'}</dd>
                  <dt>Duration</dt>
                  <dd className="num">{duration(r.startedAt, r.finishedAt)}</dd>
                  <dt>Liveness</dt>
                  <dd>{r.liveness ? words(r.liveness) : '—'}</dd>
                  <dt>Exit code</dt>
                  <dd className="num">{r.exitCode ?? '—'}</dd>
                  <dt>Error code</dt>
                  <dd>{r.errorCode ?? 'none'}</dd>
                  <dt>Error</dt>
                  <dd className="prewrap">{r.error ?? 'none'}</dd>
                  <dt>Session</dt>
                  <dd className="mono small">{r.sessionId ?? 'none'}</dd>
                  {r.retryAttempt ? (
                    <>
                      <dt>Retry</dt>
                      <dd>
                        attempt {r.retryAttempt}
                        {r.retryNotBefore ? `, not before ${exactTime(r.retryNotBefore)}` : ''}
                      </dd>
                    </>
                  ) : null}
                </dl>
                {r.summary ? <p className="prewrap">{r.summary}</p> : null}
              </Section>
              <Section title="Usage">
                <dl className="facts">
                  <dt>Cost</dt>
                  <dd className="num">
                    {runCost(r.usage)}
                    {r.usage.costStatus && r.usage.costStatus !== 'unpriced' ? <span className="muted small"> ({r.usage.costStatus})</span> : null}
                  </dd>
                  <dt>Input tokens</dt>
                  <dd className="num">{count(r.usage.inputTokens)}</dd>
                  <dt>Cached input</dt>
                  <dd className="num">{count(r.usage.cachedInputTokens)}</dd>
                  <dt>Cache writes</dt>
                  <dd className="num">{count(r.usage.cacheWriteTokens)}</dd>
                  <dt>Output tokens</dt>
                  <dd className="num">{count(r.usage.outputTokens)}</dd>
                  <dt>Unpriced tokens</dt>
                  <dd className="num">{count(r.usage.unpricedTokens)}</dd>
                  <dt>Provider</dt>
                  <dd>{[r.usage.provider, r.usage.biller, r.usage.billingType].filter(Boolean).join(' · ') || '—'}</dd>
                </dl>
              </Section>
            </div>
          </div>
        </>
      )}
    </Query>
  )
}
