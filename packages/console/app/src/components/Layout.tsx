import type { SquadSummary } from '@slaw/client'
import { useMutation, useQueryClient } from '@tanstack/react-query'
import { createContext, useCallback, useContext, useEffect, useRef, useState, type ReactNode } from 'react'
import { unwrap } from '../lib/api'
import { requestSearchFocus } from '../lib/focus'
import { actionFor, isTyping, moveSelection, shortcuts } from '../lib/keys'
import { href, navigate, useLocation, type Route } from '../lib/router'
import { useApi, useLiveState } from '../state'
import { applyTheme, storedTheme, type Theme } from '../theme'
import { NewIssueDialog } from './NewIssueDialog'

const nav: { name: Route['name']; label: string }[] = [
  { name: 'overview', label: 'Overview' },
  { name: 'issues', label: 'Issues' },
  { name: 'agents', label: 'Agents' },
  { name: 'runs', label: 'Runs' },
  { name: 'approvals', label: 'Approvals' },
  { name: 'costs', label: 'Costs' },
  { name: 'activity', label: 'Activity' },
  { name: 'routines', label: 'Routines' },
  { name: 'secrets', label: 'Secrets' },
]
const sectionOf: Partial<Record<Route['name'], Route['name']>> = { issue: 'issues', agent: 'agents', run: 'runs', routine: 'routines' }

const NewIssueContext = createContext<() => void>(() => undefined)
/** Opens the new-issue dialog (the `c` shortcut and the Issues page's button share it). */
export const useNewIssue = () => useContext(NewIssueContext)

export function Layout({ squads, squadId, children }: { squads: SquadSummary[]; squadId: string | null; children: ReactNode }) {
  const { route } = useLocation()
  const api = useApi()
  const queryClient = useQueryClient()
  const live = useLiveState()
  const [theme, setTheme] = useState<Theme>(storedTheme)
  const [help, setHelp] = useState(false)
  const [creating, setCreating] = useState(false)
  const [menu, setMenu] = useState(false)
  const mainRef = useRef<HTMLElement>(null)
  const selected = useRef(-1)
  const previousKey = useRef<string | null>(null)

  const signOut = useMutation({
    mutationFn: async () => unwrap(await api.DELETE('/api/console/session')),
    onSettled: async () => {
      // The session read answers 401 now, which shows the sign-in page; nothing read while signed in stays cached.
      await queryClient.resetQueries({ queryKey: ['session'] })
      queryClient.removeQueries({ predicate: (q) => q.queryKey[0] !== 'session' })
    },
  })

  const openNewIssue = useCallback(() => {
    if (squadId) setCreating(true)
  }, [squadId])

  // Row selection restarts on every page.
  useEffect(() => {
    selected.current = -1
    setMenu(false)
  }, [route])

  useEffect(() => {
    function onKey(e: KeyboardEvent) {
      if (isTyping(e.target)) return
      const action = actionFor(e, previousKey.current)
      previousKey.current = e.key === 'g' && !previousKey.current ? 'g' : null
      if (!action) return
      const rows = [...(mainRef.current?.querySelectorAll<HTMLElement>('[data-row]') ?? [])]
      const go = (name: Route['name']) => squadId && navigate(href({ name, squadId } as Route))
      switch (action) {
        case 'next':
        case 'previous': {
          e.preventDefault()
          const current = rows.indexOf(document.activeElement as HTMLElement)
          selected.current = moveSelection(current >= 0 ? current : selected.current, action === 'next' ? 1 : -1, rows.length)
          rows[selected.current]?.focus()
          rows[selected.current]?.scrollIntoView({ block: 'nearest' })
          return
        }
        case 'open':
          // Enter on a focused link already follows it; a focused row opens its first link.
          if ((document.activeElement as HTMLElement | null)?.dataset?.row !== undefined && document.activeElement?.tagName !== 'A') {
            document.activeElement?.querySelector<HTMLAnchorElement>('a')?.click()
          }
          return
        case 'search': {
          e.preventDefault()
          const focusSearch = () => document.querySelector<HTMLInputElement>('[data-search]')?.focus()
          if (route.name !== 'issues') {
            requestSearchFocus()
            go('issues')
          } else focusSearch()
          return
        }
        case 'create':
          e.preventDefault()
          openNewIssue()
          return
        case 'help':
          e.preventDefault()
          setHelp(true)
          return
        case 'go-overview':
          return go('overview')
        case 'go-issues':
          return go('issues')
        case 'go-agents':
          return go('agents')
        case 'go-approvals':
          return go('approvals')
        case 'close':
          setHelp(false)
          setCreating(false)
          return
      }
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [route, squadId, openNewIssue])

  const current = sectionOf[route.name] ?? route.name
  const toggleTheme = () => {
    const next = theme === 'dark' ? 'light' : 'dark'
    applyTheme(next)
    setTheme(next)
  }

  return (
    <NewIssueContext.Provider value={openNewIssue}>
      <a className="skip" href="#main" onClick={(e) => (e.preventDefault(), mainRef.current?.focus())}>
        Skip to content
      </a>
      <header className="top">
        <a className="brand" href={squadId ? href({ name: 'overview', squadId }) : '#/'}>
          slaw
        </a>
        <label className="squad-switch">
          <span className="visually-hidden">Squad</span>
          <select
            aria-label="Squad"
            value={squadId ?? ''}
            // Squads have no live event of their own: the list is read again when someone opens it.
            onFocus={() => void queryClient.invalidateQueries({ queryKey: ['squads'] })}
            onChange={(e) => navigate(href({ name: sectionOf[route.name] ?? (route.name === 'home' || route.name === 'not-found' ? 'overview' : route.name), squadId: e.target.value } as Route))}
          >
            {squadId ? null : <option value="">Choose a squad</option>}
            {squads.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
                {s.status === 'archived' ? ' (archived)' : ''}
              </option>
            ))}
          </select>
        </label>
        <span className={`live live-${live}`} role="status" title="Live updates from the event stream">
          {live === 'live' ? 'Live' : live === 'connecting' ? 'Connecting' : 'Offline'}
        </span>
        <div className="top-actions">
          <button type="button" className="ghost" onClick={() => setHelp(true)} aria-label="Keyboard shortcuts">
            ?
          </button>
          <button type="button" className="ghost" onClick={toggleTheme} aria-label={theme === 'dark' ? 'Switch to light theme' : 'Switch to dark theme'}>
            {theme === 'dark' ? 'Light' : 'Dark'}
          </button>
          <button type="button" className="ghost" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
            Sign out
          </button>
          <button type="button" className="ghost menu-button" aria-expanded={menu} aria-controls="nav" onClick={() => setMenu((m) => !m)}>
            Menu
          </button>
        </div>
      </header>
      <div className="shell">
        <nav id="nav" aria-label="Sections" className={menu ? 'open' : ''}>
          {squadId
            ? nav.map((n) => (
                <a key={n.name} href={href({ name: n.name, squadId } as Route)} aria-current={current === n.name ? 'page' : undefined}>
                  {n.label}
                </a>
              ))
            : null}
        </nav>
        <main id="main" ref={mainRef} tabIndex={-1}>
          {children}
        </main>
      </div>
      {help ? (
        <dialog open className="modal" aria-labelledby="shortcuts-title" onKeyDown={(e) => e.key === 'Escape' && setHelp(false)}>
          <h2 id="shortcuts-title">Keyboard shortcuts</h2>
          <table className="shortcuts">
            <tbody>
              {shortcuts.map((s) => (
                <tr key={s.key}>
                  <td>
                    <kbd>{s.key}</kbd>
                  </td>
                  <td>{s.label}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <button type="button" autoFocus onClick={() => setHelp(false)}>
            Close
          </button>
        </dialog>
      ) : null}
      {creating && squadId ? <NewIssueDialog squadId={squadId} onClose={() => setCreating(false)} /> : null}
    </NewIssueContext.Provider>
  )
}
