import type { UseQueryResult } from '@tanstack/react-query'
import type { ReactNode } from 'react'
import { describeFailure } from '../lib/api'
import { words } from '../lib/format'

export function Loading({ label }: { label: string }) {
  return (
    <p className="muted" role="status" aria-live="polite">
      {label}…
    </p>
  )
}

export function ErrorBox({ error }: { error: unknown }) {
  return (
    <p className="error" role="alert">
      {describeFailure(error)}
    </p>
  )
}

/** Loading and error states for a query in one place; `children` gets the data. */
export function Query<T>({ query, label, children }: { query: UseQueryResult<T>; label: string; children: (data: T) => ReactNode }) {
  if (query.isPending) return <Loading label={`Loading ${label}`} />
  if (query.error) return <ErrorBox error={query.error} />
  return <>{children(query.data as T)}</>
}

/** An empty state says what is missing and what to do about it. */
export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p>
        <strong>{title}</strong>
      </p>
      {children ? <p className="muted">{children}</p> : null}
    </div>
  )
}

export function Status({ value }: { value: string | null | undefined }) {
  if (!value) return <span className="muted">—</span>
  return <span className={`badge s-${value}`}>{words(value)}</span>
}

export function Stat({ label, value, hint, tone }: { label: string; value: ReactNode; hint?: ReactNode; tone?: 'warn' | 'bad' | 'good' }) {
  return (
    <div className={`stat${tone ? ` tone-${tone}` : ''}`}>
      <div className="stat-label">{label}</div>
      <div className="stat-value num">{value}</div>
      {hint ? <div className="stat-hint muted">{hint}</div> : null}
    </div>
  )
}

export function Section({ title, actions, children, id }: { title: string; actions?: ReactNode; children: ReactNode; id?: string }) {
  const headingId = `h-${(id ?? title).toLowerCase().replace(/[^a-z0-9]+/g, '-')}`
  return (
    <section className="card" aria-labelledby={headingId}>
      <div className="card-head">
        <h2 id={headingId}>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  )
}

export function PageTitle({ children, actions }: { children: ReactNode; actions?: ReactNode }) {
  return (
    <div className="page-head">
      <h1>{children}</h1>
      {actions ? <div className="actions">{actions}</div> : null}
    </div>
  )
}

/** The squad's agents as the options of a select (a filter's or an assignment's choices). */
export function AgentOptions({ agents }: { agents: readonly { id: string; name: string }[] }) {
  return (
    <>
      {agents.map((a) => (
        <option key={a.id} value={a.id}>
          {a.name}
        </option>
      ))}
    </>
  )
}
