import { useSyncExternalStore } from 'react'

/**
 * Routes live in the URL's hash (`#/squads/<id>/issues?status=todo`): the console is served as
 * static files under any mount path, and a hash route needs no server fallback to deep links.
 * Filters are kept in the hash's query so a reload or a shared link shows the same view.
 */
export type Route =
  | { name: 'home' }
  | { name: 'overview'; squadId: string }
  | { name: 'issues'; squadId: string }
  | { name: 'issue'; squadId: string; id: string }
  | { name: 'agents'; squadId: string }
  | { name: 'agent'; squadId: string; id: string }
  | { name: 'runs'; squadId: string }
  | { name: 'run'; squadId: string; id: string }
  | { name: 'approvals'; squadId: string }
  | { name: 'costs'; squadId: string }
  | { name: 'activity'; squadId: string }
  | { name: 'routines'; squadId: string }
  | { name: 'routine'; squadId: string; id: string }
  | { name: 'secrets'; squadId: string }
  | { name: 'not-found'; path: string }

export interface Location {
  route: Route
  query: URLSearchParams
}

const sections = ['issues', 'agents', 'runs', 'approvals', 'costs', 'activity', 'routines', 'secrets'] as const
const withDetail = new Set(['issues', 'agents', 'runs', 'routines'])
const detailName = { issues: 'issue', agents: 'agent', runs: 'run', routines: 'routine' } as const

export function parseHash(hash: string): Location {
  const raw = hash.replace(/^#/, '') || '/'
  const [path = '/', search = ''] = raw.split('?', 2)
  const query = new URLSearchParams(search)
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent)
  if (parts.length === 0) return { route: { name: 'home' }, query }
  if (parts[0] === 'squads' && parts[1]) {
    const squadId = parts[1]
    const section = parts[2]
    if (!section) return { route: { name: 'overview', squadId }, query }
    if ((sections as readonly string[]).includes(section)) {
      const s = section as (typeof sections)[number]
      if (parts.length === 3) return { route: { name: s, squadId } as Route, query }
      if (parts.length === 4 && withDetail.has(s)) return { route: { name: detailName[s as keyof typeof detailName], squadId, id: parts[3]! }, query }
    }
  }
  return { route: { name: 'not-found', path }, query }
}

/** The hash for a route, with an optional query (empty values are dropped). */
export function href(route: Route, query?: Record<string, string | undefined | null>): string {
  let path: string
  switch (route.name) {
    case 'home':
      path = '/'
      break
    case 'not-found':
      path = route.path
      break
    case 'overview':
      path = `/squads/${encodeURIComponent(route.squadId)}`
      break
    case 'issue':
    case 'agent':
    case 'run':
    case 'routine':
      path = `/squads/${encodeURIComponent(route.squadId)}/${route.name}s/${encodeURIComponent(route.id)}`
      break
    default:
      path = `/squads/${encodeURIComponent(route.squadId)}/${route.name}`
  }
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(query ?? {})) if (v) params.set(k, v)
  const qs = params.toString()
  return `#${path}${qs ? `?${qs}` : ''}`
}

function subscribe(onChange: () => void) {
  window.addEventListener('hashchange', onChange)
  return () => window.removeEventListener('hashchange', onChange)
}

/** The current location, re-rendering on every hash change. */
export function useLocation(): Location {
  const hash = useSyncExternalStore(subscribe, () => window.location.hash)
  // Parsing is cheap; memoising on the string keeps identities stable across renders.
  return cachedParse(hash)
}

let lastHash: string | null = null
let lastLocation: Location = parseHash('')
function cachedParse(hash: string): Location {
  if (hash !== lastHash) {
    lastHash = hash
    lastLocation = parseHash(hash)
  }
  return lastLocation
}

export function navigate(to: string, replace = false): void {
  if (replace) window.location.replace(to)
  else window.location.hash = to.replace(/^#/, '')
}
