import { useQuery } from '@tanstack/react-query'
import { useMemo } from 'react'
import { unwrap } from './lib/api'
import { useApi } from './state'

// Reads shared by several pages. Keys start with what they read, so live events (lib/live.ts)
// can mark them stale by prefix.

export function useAgents(squadId: string) {
  const api = useApi()
  return useQuery({
    queryKey: ['squad', squadId, 'agents'],
    queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/agents', { params: { path: { squadId } } })).agents,
  })
}

/** An agent's name by id ("an agent no longer listed" for one deleted since). */
export function useAgentName(squadId: string): (id: string | null | undefined) => string {
  const agents = useAgents(squadId)
  return useMemo(() => {
    const names = new Map((agents.data ?? []).map((a) => [a.id, a.name]))
    return (id) => (id ? (names.get(id) ?? (agents.data ? 'a removed agent' : '…')) : 'nobody')
  }, [agents.data])
}

export function useDashboard(squadId: string) {
  const api = useApi()
  return useQuery({
    queryKey: ['squad', squadId, 'dashboard'],
    queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/dashboard', { params: { path: { squadId } } })),
  })
}

export function useBudgets(squadId: string) {
  const api = useApi()
  return useQuery({
    queryKey: ['squad', squadId, 'budgets'],
    queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/budgets/overview', { params: { path: { squadId } } })),
  })
}

/** The month's spend per UTC day (the Costs page's table and the Overview's chart). */
export function useCostsByDay(squadId: string) {
  const api = useApi()
  return useQuery({
    queryKey: ['squad', squadId, 'costs', 'by-day'],
    queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/costs/by-day', { params: { path: { squadId } } })),
  })
}

type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'timed_out'
export function useRuns(squadId: string, filter: { status?: RunStatus[]; agentId?: string; limit?: number } = {}) {
  const api = useApi()
  return useQuery({
    queryKey: ['squad', squadId, 'runs', filter],
    queryFn: async () =>
      unwrap(
        await api.GET('/api/squads/{squadId}/heartbeat-runs', {
          params: {
            path: { squadId },
            query: { ...(filter.status ? { status: filter.status.join(',') } : {}), ...(filter.agentId ? { agentId: filter.agentId } : {}), limit: filter.limit ?? 50 },
          },
        }),
      ),
  })
}

type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'revision_requested'
/** The squad's approvals (of one status, or naming one issue, or all), newest first. */
export function useApprovals(squadId: string, status?: ApprovalStatus, issueId?: string) {
  const api = useApi()
  return useQuery({
    queryKey: ['squad', squadId, 'approvals', status ?? 'all', issueId ?? 'any'],
    queryFn: async () =>
      unwrap(await api.GET('/api/squads/{squadId}/approvals', { params: { path: { squadId }, query: { ...(status ? { status } : {}), ...(issueId ? { issueId } : {}), limit: 100 } } })).approvals,
  })
}

export interface IssueFilter {
  status?: string
  assigneeAgentId?: string
  q?: string
  limit?: number
}
export function useIssues(squadId: string, filter: IssueFilter) {
  const api = useApi()
  return useQuery({
    queryKey: ['squad', squadId, 'issues', filter],
    queryFn: async () =>
      unwrap(
        await api.GET('/api/squads/{squadId}/issues', {
          params: {
            path: { squadId },
            query: {
              ...(filter.status ? { status: filter.status } : {}),
              ...(filter.assigneeAgentId ? { assigneeAgentId: filter.assigneeAgentId } : {}),
              ...(filter.q ? { q: filter.q } : {}),
              limit: filter.limit ?? 200,
            },
          },
        }),
      ).issues,
    placeholderData: (previous) => previous,
  })
}
