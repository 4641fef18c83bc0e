import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState, type FormEvent } from 'react'
import { AgentOptions, ErrorBox, Empty, PageTitle, Query, Section, Status } from '../components/ui'
import { unwrap } from '../lib/api'
import { ago, exactTime, runCost, words } from '../lib/format'
import { href } from '../lib/router'
import { useAgentName, useAgents, useApprovals } from '../queries'
import { useApi } from '../state'
import { issueStatuses } from './Issues'

// PATCH cannot move an issue to in_progress: a checkout does that (docs/issues.md).
const settableStatuses = issueStatuses.filter((s) => s !== 'in_progress')

export function IssuePage({ squadId, id }: { squadId: string; id: string }) {
  const api = useApi()
  const issue = useQuery({ queryKey: ['issue', id], queryFn: async () => unwrap(await api.GET('/api/issues/{id}', { params: { path: { id } } })).issue })
  const agentName = useAgentName(squadId)
  return (
    <Query query={issue} label="the issue">
      {(i) => (
        <>
          <PageTitle>
            <span className="muted num">{i.identifier}</span> {i.title}
          </PageTitle>
          <div className="grid2 wide-left">
            <div>
              <Section title="Description">{i.description ? <p className="prewrap">{i.description}</p> : <p className="muted">No description.</p>}</Section>
              <Comments issueId={id} agentName={agentName} />
            </div>
            <div>
              <Section title="Details">
                <dl className="facts">
                  <dt>Status</dt>
                  <dd>
                    <Status value={i.status} />
                  </dd>
                  <dt>Priority</dt>
                  <dd>{i.priority}</dd>
                  <dt>Assignee</dt>
                  <dd>{i.assigneeAgentId ? <a href={href({ name: 'agent', squadId, id: i.assigneeAgentId })}>{agentName(i.assigneeAgentId)}</a> : 'unassigned'}</dd>
                  <dt>Checked out by</dt>
                  <dd>{i.checkoutAgentId ? <span title={exactTime(i.checkedOutAt)}>{agentName(i.checkoutAgentId)} · {ago(i.checkedOutAt)}</span> : 'nobody'}</dd>
                  <dt>Blocked by</dt>
                  <dd>
                    {i.blockedBy.length
                      ? i.blockedBy.map((b) => (
                          <a key={b.id} href={href({ name: 'issue', squadId, id: b.id })}>
                            {b.identifier}{' '}
                          </a>
                        ))
                      : 'nothing'}
                  </dd>
                  <dt>Updated</dt>
                  <dd title={exactTime(i.updatedAt)}>{ago(i.updatedAt)}</dd>
                </dl>
                <IssueControls squadId={squadId} id={id} status={i.status} assignee={i.assigneeAgentId} />
              </Section>
              <IssueRuns squadId={squadId} id={id} agentName={agentName} />
              <IssueApprovals squadId={squadId} id={id} />
            </div>
          </div>
        </>
      )}
    </Query>
  )
}

function IssueControls({ squadId, id, status, assignee }: { squadId: string; id: string; status: string; assignee: string | null }) {
  const api = useApi()
  const queryClient = useQueryClient()
  const agents = useAgents(squadId)
  const update = useMutation({
    mutationFn: async (body: { status?: (typeof settableStatuses)[number]; assigneeAgentId?: string | null }) =>
      unwrap(await api.PATCH('/api/issues/{id}', { params: { path: { id } }, body })).issue,
    onSuccess: (issue) => {
      queryClient.setQueryData(['issue', id], issue)
      void queryClient.invalidateQueries({ queryKey: ['squad', squadId, 'issues'] })
    },
  })
  return (
    <div className="controls">
      <label>
        Change status
        <select
          value={status === 'in_progress' ? '' : status}
          onChange={(e) => e.target.value && update.mutate({ status: e.target.value as (typeof settableStatuses)[number] })}
          disabled={update.isPending}
        >
          {status === 'in_progress' ? <option value="">in progress (checked out)</option> : null}
          {settableStatuses.map((s) => (
            <option key={s} value={s}>
              {words(s)}
            </option>
          ))}
        </select>
      </label>
      <label>
        Assign to
        <select value={assignee ?? ''} onChange={(e) => update.mutate({ assigneeAgentId: e.target.value || null })} disabled={update.isPending}>
          <option value="">Nobody</option>
          <AgentOptions agents={(agents.data ?? []).filter((a) => a.status !== 'terminated' || a.id === assignee)} />
        </select>
      </label>
      {update.error ? <ErrorBox error={update.error} /> : null}
    </div>
  )
}

function Comments({ issueId, agentName }: { issueId: string; agentName: (id: string) => string }) {
  const api = useApi()
  const queryClient = useQueryClient()
  const comments = useQuery({
    queryKey: ['issue', issueId, 'comments'],
    queryFn: async () => unwrap(await api.GET('/api/issues/{id}/comments', { params: { path: { id: issueId }, query: { order: 'asc', limit: 500 } } })).comments,
  })
  const [body, setBody] = useState('')
  const add = useMutation({
    mutationFn: async (text: string) => unwrap(await api.POST('/api/issues/{id}/comments', { params: { path: { id: issueId } }, body: { body: text } })),
    onSuccess: () => {
      setBody('')
      void queryClient.invalidateQueries({ queryKey: ['issue', issueId] })
    },
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (body.trim()) add.mutate(body.trim())
  }
  return (
    <Section title="Comments">
      <Query query={comments} label="comments">
        {(list) =>
          list.length === 0 ? (
            <p className="muted">No comments yet. Write one below; the assignee reads it on its next run.</p>
          ) : (
            <ol className="comments">
              {list.map((c) => (
                <li key={c.id}>
                  <div className="muted small">
                    {c.authorType === 'agent' ? agentName(c.authorId) : c.authorType === 'user' ? 'an Operator' : c.authorType} · <span title={exactTime(c.createdAt)}>{ago(c.createdAt)}</span>
                  </div>
                  <p className="prewrap">{c.body}</p>
                </li>
              ))}
            </ol>
          )
        }
      </Query>
      <form onSubmit={submit} className="comment-form">
        <label htmlFor={`comment-${issueId}`}>Add a comment</label>
        <textarea id={`comment-${issueId}`} rows={3} value={body} onChange={(e) => setBody(e.target.value)} />
        {add.error ? <ErrorBox error={add.error} /> : null}
        <button type="submit" disabled={add.isPending || !body.trim()}>
          Comment
        </button>
      </form>
    </Section>
  )
}

function IssueRuns({ squadId, id, agentName }: { squadId: string; id: string; agentName: (id: string) => string }) {
  const api = useApi()
  const runs = useQuery({ queryKey: ['issue', id, 'runs'], queryFn: async () => unwrap(await api.GET('/api/issues/{id}/runs', { params: { path: { id } } })).runs })
  return (
    <Section title="Runs">
      <Query query={runs} label="runs">
        {(list) =>
          list.length === 0 ? (
            <p className="muted">No run has worked on this issue yet. Assign it to an agent to start one.</p>
          ) : (
            <ul className="plain">
              {list.map((r) => (
                <li key={r.id}>
                  <a data-row href={href({ name: 'run', squadId, id: r.id })}>
                    {agentName(r.agentId)}
                  </a>{' '}
                  <Status value={r.status} /> <span className="muted small num">{ago(r.createdAt)} · {runCost(r.usage)}</span>
                </li>
              ))}
            </ul>
          )
        }
      </Query>
    </Section>
  )
}

/** Every approval that names the issue, whatever its state (`?issueId=`), newest first. */
function IssueApprovals({ squadId, id }: { squadId: string; id: string }) {
  const approvals = useApprovals(squadId, undefined, id)
  return (
    <Section title="Approvals">
      <Query query={approvals} label="approvals">
        {(list) =>
          list.length === 0 ? (
            <Empty title="No approval names this issue." />
          ) : (
            <ul className="plain">
              {list.map((a) => (
                <li key={a.id}>
                  <a href={href({ name: 'approvals', squadId }, a.status === 'pending' ? {} : { status: a.status })}>{typeof a.payload.title === 'string' ? a.payload.title : words(a.type)}</a> <Status value={a.status} />{' '}
                  <span className="muted small" title={exactTime(a.decidedAt ?? a.createdAt)}>
                    {a.decidedAt ? `decided ${ago(a.decidedAt)}` : `asked ${ago(a.createdAt)}`}
                  </span>
                </li>
              ))}
            </ul>
          )
        }
      </Query>
    </Section>
  )
}
