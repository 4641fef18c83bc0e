import type { IssueSummary } from '@slaw/client'
import { useEffect, useRef, useState } from 'react'
import { DataTable } from '../components/DataTable'
import { useNewIssue } from '../components/Layout'
import { AgentOptions, Empty, PageTitle, Query, Status } from '../components/ui'
import { takeSearchFocus } from '../lib/focus'
import { words } from '../lib/format'
import { href, navigate, useLocation } from '../lib/router'
import { useAgentName, useAgents, useIssues } from '../queries'

export const issueStatuses = ['backlog', 'todo', 'in_progress', 'in_review', 'blocked', 'done', 'cancelled'] as const
const boardColumns = ['backlog', 'todo', 'in_progress', 'in_review', 'blocked', 'done'] as const

export function IssuesPage({ squadId }: { squadId: string }) {
  const { query } = useLocation()
  const status = query.get('status') ?? ''
  const assignee = query.get('assignee') ?? ''
  const q = query.get('q') ?? ''
  const view = query.get('view') === 'board' ? 'board' : 'list'
  const agents = useAgents(squadId)
  const newIssue = useNewIssue()
  const [search, setSearch] = useState(q)
  useEffect(() => setSearch(q), [q])
  const searchRef = useRef<HTMLInputElement>(null)
  useEffect(() => {
    if (takeSearchFocus()) searchRef.current?.focus()
  }, [])

  // Filters live in the URL: a reload or a shared link shows the same list.
  const setFilter = (patch: Record<string, string>) => {
    const next = { status, assignee, q, view: view === 'board' ? 'board' : '', ...patch }
    navigate(href({ name: 'issues', squadId }, next), true)
  }

  return (
    <>
      <PageTitle
        actions={
          <button type="button" onClick={newIssue}>
            New issue
          </button>
        }
      >
        Issues
      </PageTitle>
      <form
        className="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault()
          setFilter({ q: search.trim() })
        }}
      >
        <label>
          <span className="visually-hidden">Search issues</span>
          <input ref={searchRef} data-search type="search" placeholder="Search issues (/)" aria-label="Search issues" value={search} onChange={(e) => setSearch(e.target.value)} />
        </label>
        <label>
          Status
          <select value={status} onChange={(e) => setFilter({ status: e.target.value })} disabled={view === 'board'}>
            <option value="">Any</option>
            {issueStatuses.map((s) => (
              <option key={s} value={s}>
                {words(s)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Assignee
          <select value={assignee} onChange={(e) => setFilter({ assignee: e.target.value })}>
            <option value="">Anyone</option>
            <AgentOptions agents={agents.data ?? []} />
          </select>
        </label>
        <div className="segmented" role="group" aria-label="View">
          <button type="button" aria-pressed={view === 'list'} onClick={() => setFilter({ view: '' })}>
            List
          </button>
          <button type="button" aria-pressed={view === 'board'} onClick={() => setFilter({ view: 'board' })}>
            Board
          </button>
        </div>
      </form>
      {view === 'board' ? <Board squadId={squadId} assignee={assignee} q={q} /> : <List squadId={squadId} status={status} assignee={assignee} q={q} />}
    </>
  )
}

function List({ squadId, status, assignee, q }: { squadId: string; status: string; assignee: string; q: string }) {
  const issues = useIssues(squadId, { status, assigneeAgentId: assignee, q })
  const agentName = useAgentName(squadId)
  const filtered = Boolean(status || assignee || q)
  return (
    <Query query={issues} label="issues">
      {(list) =>
        list.length === 0 ? (
          filtered ? (
            <Empty title="No issue matches these filters.">Clear a filter, or search for other words.</Empty>
          ) : (
            <Empty title="No issues yet.">Press c or use New issue to write the first one; agents pick up issues assigned to them.</Empty>
          )
        ) : (
          <DataTable
            caption="Issues"
            rows={list}
            rowKey={(i) => i.id}
            columns={[
              {
                header: 'Issue',
                cell: (i) => (
                  <a data-row href={href({ name: 'issue', squadId, id: i.id })}>
                    {i.identifier}
                  </a>
                ),
              },
              { header: 'Title', cell: (i) => i.title },
              { header: 'Status', cell: (i) => <Status value={i.status} /> },
              { header: 'Priority', cell: (i) => <span className={`prio p-${i.priority}`}>{i.priority}</span> },
              { header: 'Assignee', cell: (i) => (i.assigneeAgentId ? agentName(i.assigneeAgentId) : <span className="muted">unassigned</span>) },
            ]}
            footer={list.length >= 200 ? <p className="muted small">Showing the first 200; narrow the filters to see others.</p> : null}
          />
        )
      }
    </Query>
  )
}

function Board({ squadId, assignee, q }: { squadId: string; assignee: string; q: string }) {
  return (
    <div className="board">
      {boardColumns.map((s) => (
        <Column key={s} squadId={squadId} status={s} assignee={assignee} q={q} />
      ))}
    </div>
  )
}

function Column({ squadId, status, assignee, q }: { squadId: string; status: string; assignee: string; q: string }) {
  const issues = useIssues(squadId, { status, assigneeAgentId: assignee, q, limit: 100 })
  const agentName = useAgentName(squadId)
  const headingId = `col-${status}`
  return (
    <section className="column" aria-labelledby={headingId}>
      <h2 id={headingId}>
        {words(status)} <span className="muted num">{issues.data ? (issues.data.length >= 100 ? '100+' : issues.data.length) : ''}</span>
      </h2>
      <Query query={issues} label={words(status)}>
        {(list: IssueSummary[]) =>
          list.length === 0 ? (
            <p className="muted small">None</p>
          ) : (
            list.map((i) => (
              <a key={i.id} data-row className="issue-card" href={href({ name: 'issue', squadId, id: i.id })}>
                <span className="num muted small">{i.identifier}</span> {i.title}
                <span className="muted small">
                  {' '}
                  · {i.priority} · {i.assigneeAgentId ? agentName(i.assigneeAgentId) : 'unassigned'}
                </span>
              </a>
            ))
          )
        }
      </Query>
    </section>
  )
}
