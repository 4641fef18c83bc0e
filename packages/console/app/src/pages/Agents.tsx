import type { Agent } from '@slaw/client'
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useMemo } from 'react'
import { DataTable } from '../components/DataTable'
import { Empty, ErrorBox, PageTitle, Query, Section, Status } from '../components/ui'
import { unwrap, type EnvironmentCheck } from '../lib/api'
import { ago, exactTime, money, percent, tokens, words } from '../lib/format'
import { href } from '../lib/router'
import { useAgents, useBudgets, useIssues, useRuns } from '../queries'
import { useApi } from '../state'
import { RunTable } from './Runs'

export function AgentsPage({ squadId }: { squadId: string }) {
  const api = useApi()
  const agents = useAgents(squadId)
  // Current issue, last run and spend come from three squad-wide reads, not one call per agent.
  const working = useIssues(squadId, { status: 'in_progress', limit: 500 })
  const runs = useRuns(squadId, { limit: 200 })
  const spend = useQuery({
    queryKey: ['squad', squadId, 'costs', 'by-agent'],
    queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/costs/by-agent', { params: { path: { squadId } } })),
  })
  const currentIssue = useMemo(() => new Map((working.data ?? []).filter((i) => i.assigneeAgentId).map((i) => [i.assigneeAgentId!, i])), [working.data])
  const lastRun = useMemo(() => {
    const m = new Map<string, NonNullable<typeof runs.data>['runs'][number]>()
    for (const r of runs.data?.runs ?? []) if (!m.has(r.agentId)) m.set(r.agentId, r)
    return m
  }, [runs.data])
  const spent = useMemo(() => new Map((spend.data?.agents ?? []).map((a) => [a.agentId, a])), [spend.data])
  return (
    <>
      <PageTitle>Agents</PageTitle>
      <Query query={agents} label="agents">
        {(list) =>
          list.length === 0 ? (
            <Empty title="No agents in this squad.">Create one with POST /api/squads/&#123;squadId&#125;/agents or approve a hire request in Approvals.</Empty>
          ) : (
            <DataTable
              caption="Agents"
              rows={list}
              rowKey={(a) => a.id}
              columns={[
                {
                  header: 'Agent',
                  cell: (a) => (
                    <>
                      <a data-row href={href({ name: 'agent', squadId, id: a.id })}>
                        {a.name}
                      </a>{' '}
                      <span className="muted small">{a.title ?? words(a.role)}</span>
                    </>
                  ),
                },
                { header: 'Status', cell: (a) => <Status value={a.status} /> },
                {
                  header: 'Current issue',
                  cell: (a) => {
                    const issue = currentIssue.get(a.id)
                    return issue ? (
                      <a href={href({ name: 'issue', squadId, id: issue.id })}>
                        {issue.identifier} {issue.title}
                      </a>
                    ) : (
                      <span className="muted">none</span>
                    )
                  },
                },
                {
                  header: 'Last run',
                  cell: (a) => {
                    const run = lastRun.get(a.id)
                    return run ? (
                      <a href={href({ name: 'run', squadId, id: run.id })}>
                        <Status value={run.status} /> <span className="small num">{ago(run.createdAt)}</span>
                      </a>
                    ) : (
                      <span className="muted">none</span>
                    )
                  },
                },
                {
                  header: 'Month spend',
                  num: true,
                  cell: (a) => {
                    const cost = spent.get(a.id)
                    return (
                      <>
                        {money(cost?.costCents ?? 0)}
                        {cost?.unpricedTokens ? <span className="muted small"> +{tokens(cost.unpricedTokens)} unpriced</span> : null}
                      </>
                    )
                  },
                },
              ]}
            />
          )
        }
      </Query>
    </>
  )
}

export function AgentPage({ squadId, id }: { squadId: string; id: string }) {
  const api = useApi()
  const agent = useQuery({ queryKey: ['agent', id], queryFn: async () => unwrap(await api.GET('/api/agents/{id}', { params: { path: { id } } })).agent as Agent })
  const runtime = useQuery({
    queryKey: ['agent', id, 'runtime'],
    queryFn: async () => unwrap(await api.GET('/api/agents/{id}/runtime-state', { params: { path: { id } } })).runtimeState,
  })
  const runs = useRuns(squadId, { agentId: id, limit: 20 })
  const budgets = useBudgets(squadId)
  const budget = budgets.data?.agents.find((a) => a.agentId === id)
  return (
    <Query query={agent} label="the agent">
      {(a) => (
        <>
          <PageTitle actions={<AgentActions squadId={squadId} agent={a} />}>
            {a.name} <Status value={a.status} />
          </PageTitle>
          {a.pauseReason ? <p className="warn">Paused: {a.pauseReason}</p> : null}
          <div className="grid2">
            <Section title="Configuration">
              <dl className="facts">
                <dt>Role</dt>
                <dd>{words(a.role)}</dd>
                <dt>Title</dt>
                <dd>{a.title ?? '—'}</dd>
                <dt>Adapter</dt>
                <dd>{a.adapterType}</dd>
                <dt>Instructions</dt>
                <dd className="mono small">{a.instructionsPath ?? '—'}</dd>
                <dt>Skills</dt>
                <dd>{a.desiredSkills.length ? a.desiredSkills.join(', ') : 'none'}</dd>
                <dt>Secret bindings</dt>
                <dd>
                  <SecretBindings squadId={squadId} config={a.adapterConfig} />
                </dd>
              </dl>
            </Section>
            <Section title="Budget and session">
              <dl className="facts">
                <dt>Month budget</dt>
                <dd className="num">{budget ? (budget.budgetMonthlyCents === null ? 'none' : money(budget.budgetMonthlyCents)) : '…'}</dd>
                <dt>Spent this month</dt>
                <dd className="num">
                  {budget ? `${money(budget.spentMonthlyCents)}${budget.budgetMonthlyCents !== null ? ` (${percent(budget.percentUsed)})` : ''}` : '…'}
                </dd>
                <dt>Tokens this month</dt>
                <dd className="num">{budget ? `${tokens(budget.spentMonthlyTokens)}${budget.budgetMonthlyTokens !== null ? ` of ${tokens(budget.budgetMonthlyTokens)}` : ''}` : '…'}</dd>
                <dt>Session</dt>
                <dd className="mono small">{runtime.data ? String((runtime.data.state as Record<string, unknown>).sessionId ?? runtime.data.lastRun?.sessionId ?? 'none') : '…'}</dd>
                <dt>Queued runs</dt>
                <dd className="num">{runtime.data?.queuedRuns ?? '…'}</dd>
                <dt>Last run</dt>
                <dd>
                  {runtime.data?.lastRun ? (
                    <a href={href({ name: 'run', squadId, id: runtime.data.lastRun.id })} title={exactTime(runtime.data.lastRun.createdAt)}>
                      {words(runtime.data.lastRun.status)} · {ago(runtime.data.lastRun.createdAt)}
                    </a>
                  ) : (
                    'none'
                  )}
                </dd>
              </dl>
            </Section>
          </div>
          <Section title="Runs">
            <Query query={runs} label="runs">
              {(r) => (r.runs.length ? <RunTable squadId={squadId} runs={r.runs} /> : <Empty title="No runs yet.">Use Wake now to start one.</Empty>)}
            </Query>
          </Section>
        </>
      )}
    </Query>
  )
}

/**
 * The secret bindings of an adapter config (`env.NAME = {type:'secret_ref', secretId, version}`,
 * docs/secrets.md): variable name, secret id and version only; plain values are not listed.
 */
export function secretBindings(config: Record<string, unknown> | undefined): { variable: string; secretId: string; version: string }[] {
  const env = config?.env
  if (!env || typeof env !== 'object') return []
  const out: { variable: string; secretId: string; version: string }[] = []
  for (const [variable, binding] of Object.entries(env as Record<string, unknown>)) {
    const b = binding as { type?: unknown; secretId?: unknown; version?: unknown } | null
    if (b && typeof b === 'object' && b.type === 'secret_ref' && typeof b.secretId === 'string') out.push({ variable, secretId: b.secretId, version: String(b.version ?? 'latest') })
  }
  return out.sort((a, b) => a.variable.localeCompare(b.variable))
}

function SecretBindings({ squadId, config }: { squadId: string; config: Record<string, unknown> | undefined }) {
  const api = useApi()
  const bindings = secretBindings(config)
  const secrets = useQuery({
    queryKey: ['squad', squadId, 'secrets'],
    queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/secrets', { params: { path: { squadId } } })).secrets,
    enabled: bindings.length > 0,
  })
  if (!bindings.length) return <>none</>
  const names = new Map((secrets.data ?? []).map((s) => [s.id, s.name]))
  return (
    <ul className="plain">
      {bindings.map((b) => (
        <li key={b.variable}>
          <span className="mono small">{b.variable}</span> → {names.get(b.secretId) ?? (secrets.data ? 'a removed secret' : '…')} <span className="muted small">({b.version})</span>
        </li>
      ))}
    </ul>
  )
}

function AgentActions({ squadId, agent }: { squadId: string; agent: Agent }) {
  const api = useApi()
  const queryClient = useQueryClient()
  const id = agent.id
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ['agent', id] })
    void queryClient.invalidateQueries({ queryKey: ['squad', squadId, 'agents'] })
  }
  const pause = useMutation({ mutationFn: async () => unwrap(await api.POST('/api/agents/{id}/pause', { params: { path: { id } } })), onSuccess: refresh })
  const resume = useMutation({ mutationFn: async () => unwrap(await api.POST('/api/agents/{id}/resume', { params: { path: { id } } })), onSuccess: refresh })
  const wake = useMutation({
    mutationFn: async () => unwrap(await api.POST('/api/agents/{id}/wake', { params: { path: { id } }, body: { reason: 'manual' } })),
    onSuccess: refresh,
  })
  const reset = useMutation({ mutationFn: async () => unwrap(await api.POST('/api/agents/{id}/runtime-state/reset-session', { params: { path: { id } } })), onSuccess: refresh })
  const check = useMutation({ mutationFn: async () => unwrap(await api.POST('/api/agents/{id}/check-environment', { params: { path: { id } } })).environment })
  const error = pause.error ?? resume.error ?? wake.error ?? reset.error ?? check.error
  const busy = pause.isPending || resume.isPending || wake.isPending || reset.isPending
  return (
    <div className="agent-actions">
      <div className="actions">
        {agent.status === 'paused' ? (
          <button type="button" onClick={() => resume.mutate()} disabled={busy}>
            Resume
          </button>
        ) : (
          <button type="button" onClick={() => pause.mutate()} disabled={busy || agent.status === 'terminated'}>
            Pause
          </button>
        )}
        <button type="button" onClick={() => wake.mutate()} disabled={busy || agent.status === 'paused' || agent.status === 'terminated'}>
          Wake now
        </button>
        <button type="button" className="ghost" onClick={() => check.mutate()} disabled={check.isPending}>
          Check environment
        </button>
        <button type="button" className="ghost" onClick={() => reset.mutate()} disabled={busy}>
          Reset session
        </button>
      </div>
      {wake.data ? (
        <p className="small" role="status">
          Woken: <a href={href({ name: 'run', squadId, id: wake.data.run.id })}>follow the run</a>
        </p>
      ) : null}
      {reset.isSuccess ? (
        <p className="small" role="status">
          Session reset: the next run starts fresh.
        </p>
      ) : null}
      {check.data ? <EnvironmentResult env={check.data} /> : null}
      {error ? <ErrorBox error={error} /> : null}
    </div>
  )
}

function EnvironmentResult({ env }: { env: EnvironmentCheck }) {
  return (
    <div className="env" role="status">
      <strong>{env.ok ? 'Environment ready' : 'Environment has problems'}</strong> <span className="muted small">({env.adapterType})</span>
      <ul className="plain">
        {env.checks.map((c) => (
          <li key={c.name}>
            <span className={`badge s-${c.status === 'ok' ? 'succeeded' : c.status === 'warn' ? 'blocked' : 'failed'}`}>{c.status}</span> {c.name}: {c.message}
          </li>
        ))}
      </ul>
    </div>
  )
}
