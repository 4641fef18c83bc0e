import { useQuery } from '@tanstack/react-query'
import { useEffect } from 'react'
import { Layout } from './components/Layout'
import { ErrorBox, Loading } from './components/ui'
import { ApiFailure, unwrap } from './lib/api'
import { href, navigate, useLocation, type Route } from './lib/router'
import { ActivityPage } from './pages/Activity'
import { AgentPage, AgentsPage } from './pages/Agents'
import { ApprovalsPage } from './pages/Approvals'
import { CostsPage } from './pages/Costs'
import { IssuePage } from './pages/Issue'
import { IssuesPage } from './pages/Issues'
import { OverviewPage } from './pages/Overview'
import { RoutinePage, RoutinesPage } from './pages/Routines'
import { RunPage, RunsPage } from './pages/Runs'
import { SecretsPage } from './pages/Secrets'
import { SignInPage } from './pages/SignIn'
import { LiveEvents, useApi } from './state'

const LAST_SQUAD = 'slaw-console-squad'

export function App() {
  const api = useApi()
  const session = useQuery({
    queryKey: ['session'],
    queryFn: async () => unwrap(await api.GET('/api/console/session')),
    retry: false,
  })
  if (session.isPending) return <Loading label="Checking your session" />
  if (session.error) {
    if (session.error instanceof ApiFailure && session.error.status === 401) return <SignInPage />
    return <ErrorBox error={session.error} />
  }
  return <SignedIn />
}

function SignedIn() {
  const { route } = useLocation()
  const api = useApi()
  const squads = useQuery({ queryKey: ['squads'], queryFn: async () => unwrap(await api.GET('/api/squads')).squads })

  // The home route opens the squad used last (a plain id, nothing secret), else the first one.
  useEffect(() => {
    if (route.name !== 'home' || !squads.data?.length) return
    let last: string | null = null
    try {
      last = localStorage.getItem(LAST_SQUAD)
    } catch {
      // storage off: use the first squad
    }
    const pick = squads.data.find((s) => s.id === last) ?? squads.data.find((s) => s.status === 'active') ?? squads.data[0]!
    navigate(href({ name: 'overview', squadId: pick.id }), true)
  }, [route.name, squads.data])

  const squadId = 'squadId' in route ? route.squadId : null
  useEffect(() => {
    if (!squadId) return
    try {
      localStorage.setItem(LAST_SQUAD, squadId)
    } catch {
      // storage off: nothing to remember
    }
  }, [squadId])

  if (squads.isPending) return <Loading label="Loading squads" />
  if (squads.error) return <ErrorBox error={squads.error} />
  if (!squadId) {
    return (
      <Layout squads={squads.data} squadId={null}>
        {route.name === 'not-found' ? (
          <p>No page at {route.path}. <a href="#/">Go to the overview</a>.</p>
        ) : squads.data.length === 0 ? (
          <div className="empty">
            <h1>No squads yet</h1>
            <p>
              Create one with <code>slaw squad create</code> or <code>POST /api/squads</code>, then reload this page.
            </p>
          </div>
        ) : (
          <Loading label="Opening a squad" />
        )}
      </Layout>
    )
  }
  return (
    <LiveEvents squadId={squadId}>
      <Layout squads={squads.data} squadId={squadId}>
        <Page route={route} />
      </Layout>
    </LiveEvents>
  )
}

function Page({ route }: { route: Route }) {
  switch (route.name) {
    case 'overview':
      return <OverviewPage squadId={route.squadId} />
    case 'issues':
      return <IssuesPage squadId={route.squadId} />
    case 'issue':
      return <IssuePage squadId={route.squadId} id={route.id} />
    case 'agents':
      return <AgentsPage squadId={route.squadId} />
    case 'agent':
      return <AgentPage squadId={route.squadId} id={route.id} />
    case 'runs':
      return <RunsPage squadId={route.squadId} />
    case 'run':
      return <RunPage squadId={route.squadId} id={route.id} />
    case 'approvals':
      return <ApprovalsPage squadId={route.squadId} />
    case 'costs':
      return <CostsPage squadId={route.squadId} />
    case 'activity':
      return <ActivityPage squadId={route.squadId} />
    case 'routines':
      return <RoutinesPage squadId={route.squadId} />
    case 'routine':
      return <RoutinePage squadId={route.squadId} id={route.id} />
    case 'secrets':
      return <SecretsPage squadId={route.squadId} />
    default:
      return null
  }
}
