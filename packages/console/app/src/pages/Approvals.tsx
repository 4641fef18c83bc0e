import type { Approval } from '@slaw/client'
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { Empty, ErrorBox, PageTitle, Query, Status } from '../components/ui'
import { unwrap } from '../lib/api'
import { ago, exactTime, words } from '../lib/format'
import { href, navigate, useLocation } from '../lib/router'
import { useAgentName, useApprovals } from '../queries'
import { useApi } from '../state'

const tabs = ['pending', 'revision_requested', 'approved', 'rejected'] as const
type Decision = 'approve' | 'reject' | 'request-revision'

export function ApprovalsPage({ squadId }: { squadId: string }) {
  const { query } = useLocation()
  const tab = (tabs as readonly string[]).includes(query.get('status') ?? '') ? (query.get('status') as (typeof tabs)[number]) : 'pending'
  const approvals = useApprovals(squadId, tab)
  return (
    <>
      <PageTitle>Approvals</PageTitle>
      <div className="segmented" role="group" aria-label="Approval status">
        {tabs.map((t) => (
          <button key={t} type="button" aria-pressed={t === tab} onClick={() => navigate(href({ name: 'approvals', squadId }, { status: t === 'pending' ? '' : t }), true)}>
            {words(t)}
          </button>
        ))}
      </div>
      <Query query={approvals} label="approvals">
        {(list) =>
          list.length === 0 ? (
            tab === 'pending' ? (
              <Empty title="No approval is waiting for you.">Agents ask here before board-level actions and hires; new requests appear live.</Empty>
            ) : (
              <Empty title={`No ${words(tab)} approvals.`} />
            )
          ) : (
            <div className="approvals">
              {list.map((a) => (
                <ApprovalCard key={a.id} squadId={squadId} approval={a} />
              ))}
            </div>
          )
        }
      </Query>
    </>
  )
}

function ApprovalCard({ squadId, approval }: { squadId: string; approval: Approval }) {
  const api = useApi()
  const queryClient = useQueryClient()
  const agentName = useAgentName(squadId)
  const [note, setNote] = useState('')
  const issues = useQuery({
    queryKey: ['approval', approval.id, 'issues'],
    queryFn: async () => unwrap(await api.GET('/api/approvals/{id}/issues', { params: { path: { id: approval.id } } })).issues,
  })
  const decide = useMutation({
    mutationFn: async (decision: Decision) => {
      const init = { params: { path: { id: approval.id } }, body: { decisionNote: note.trim() || null } }
      if (decision === 'approve') return unwrap(await api.POST('/api/approvals/{id}/approve', init))
      if (decision === 'reject') return unwrap(await api.POST('/api/approvals/{id}/reject', init))
      return unwrap(await api.POST('/api/approvals/{id}/request-revision', init))
    },
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['squad', squadId, 'approvals'] })
      void queryClient.invalidateQueries({ queryKey: ['squad', squadId, 'dashboard'] })
    },
  })
  const p = approval.payload as Record<string, unknown>
  const title = typeof p.title === 'string' ? p.title : approval.type === 'hire_agent' ? `Hire ${String(p.name ?? 'an agent')}` : words(approval.type)
  const headingId = `approval-${approval.id}`
  return (
    <article className="card approval" aria-labelledby={headingId}>
      <div className="card-head">
        <h2 id={headingId}>{title}</h2>
        <Status value={approval.status} />
      </div>
      <p className="muted small">
        {words(approval.type)} · asked by {approval.requestedByAgentId ? agentName(approval.requestedByAgentId) : 'an Operator'} ·{' '}
        <span title={exactTime(approval.createdAt)}>{ago(approval.createdAt)}</span>
        {approval.revision > 1 ? ` · revision ${approval.revision}` : ''}
      </p>
      {typeof p.summary === 'string' ? <p className="prewrap">{p.summary}</p> : null}
      {approval.type === 'hire_agent' ? (
        <dl className="facts">
          {(['name', 'role', 'adapterType', 'budgetMonthlyCents'] as const).map((k) =>
            p[k] !== undefined && p[k] !== null ? (
              <div key={k} className="fact">
                <dt>{k}</dt>
                <dd>{String(p[k])}</dd>
              </div>
            ) : null,
          )}
        </dl>
      ) : null}
      {typeof p.recommendedAction === 'string' ? (
        <p>
          <strong>Recommended:</strong> {p.recommendedAction}
        </p>
      ) : null}
      {Array.isArray(p.risks) && p.risks.length ? (
        <>
          <strong>Risks</strong>
          <ul>
            {p.risks.map((r, i) => (
              <li key={i}>{String(r)}</li>
            ))}
          </ul>
        </>
      ) : null}
      {issues.data?.length ? (
        <p className="small">
          Issues:{' '}
          {issues.data.map((i) => (
            <a key={i.id} href={href({ name: 'issue', squadId, id: i.id })}>
              {i.identifier}{' '}
            </a>
          ))}
        </p>
      ) : null}
      {approval.decisionNote ? (
        <p className="small">
          <strong>Decision note:</strong> {approval.decisionNote}
        </p>
      ) : null}
      {approval.status === 'pending' ? (
        <div className="decide">
          <label htmlFor={`note-${approval.id}`}>Decision note (optional)</label>
          <textarea id={`note-${approval.id}`} rows={2} value={note} onChange={(e) => setNote(e.target.value)} />
          {decide.error ? <ErrorBox error={decide.error} /> : null}
          <div className="actions">
            <button type="button" className="good" disabled={decide.isPending} onClick={() => decide.mutate('approve')}>
              Approve
            </button>
            <button type="button" className="bad" disabled={decide.isPending} onClick={() => decide.mutate('reject')}>
              Reject
            </button>
            <button type="button" className="ghost" disabled={decide.isPending} onClick={() => decide.mutate('request-revision')}>
              Request changes
            </button>
          </div>
        </div>
      ) : null}
    </article>
  )
}
