import { useQuery } from '@tanstack/react-query'
import { DataTable } from '../components/DataTable'
import { AgentOptions, Empty, PageTitle, Query } from '../components/ui'
import { unwrap } from '../lib/api'
import { ago, exactTime, words } from '../lib/format'
import { href, navigate, useLocation } from '../lib/router'
import { useAgentName, useAgents } from '../queries'
import { useApi } from '../state'

const entityTypes = ['issue', 'agent', 'heartbeat_run', 'approval', 'routine', 'secret', 'squad', 'cost_event', 'budget']

export function ActivityPage({ squadId }: { squadId: string }) {
  const api = useApi()
  const { query } = useLocation()
  const agentId = query.get('agent') ?? ''
  const entityType = query.get('entity') ?? ''
  const agents = useAgents(squadId)
  const agentName = useAgentName(squadId)
  const activity = useQuery({
    queryKey: ['squad', squadId, 'activity', { agentId, entityType }],
    queryFn: async () =>
      unwrap(
        await api.GET('/api/squads/{squadId}/activity', {
          params: { path: { squadId }, query: { ...(agentId ? { agentId } : {}), ...(entityType ? { entityType } : {}), limit: 200 } },
        }),
      ).activity,
    placeholderData: (previous) => previous,
  })
  const setFilter = (patch: Record<string, string>) => navigate(href({ name: 'activity', squadId }, { agent: agentId, entity: entityType, ...patch }), true)
  const link = (type: string, id: string) =>
    type === 'issue'
      ? href({ name: 'issue', squadId, id })
      : type === 'agent'
        ? href({ name: 'agent', squadId, id })
        : type === 'heartbeat_run'
          ? href({ name: 'run', squadId, id })
          : type === 'routine'
            ? href({ name: 'routine', squadId, id })
            : type === 'approval'
              ? href({ name: 'approvals', squadId })
              : null
  return (
    <>
      <PageTitle>Activity</PageTitle>
      <div className="filters">
        <label>
          Agent
          <select value={agentId} onChange={(e) => setFilter({ agent: e.target.value })}>
            <option value="">Any</option>
            <AgentOptions agents={agents.data ?? []} />
          </select>
        </label>
        <label>
          Entity
          <select value={entityType} onChange={(e) => setFilter({ entity: e.target.value })}>
            <option value="">Any</option>
            {entityTypes.map((t) => (
              <option key={t} value={t}>
                {t.replace(/_/g, ' ')}
              </option>
            ))}
          </select>
        </label>
      </div>
      <Query query={activity} label="activity">
        {(list) =>
          list.length === 0 ? (
            <Empty title="No activity matches.">Everything agents and Operators do is written here as it happens.</Empty>
          ) : (
            <DataTable
              caption="Activity"
              rows={list}
              rowKey={(a) => a.id}
              columns={[
                { header: 'When', cell: (a) => ago(a.createdAt), className: 'num small', title: (a) => exactTime(a.createdAt) },
                { header: 'Who', cell: (a) => (a.actorType === 'agent' ? agentName(a.actorId) : a.actorType) },
                { header: 'Action', cell: (a) => a.action, className: 'mono small' },
                {
                  header: 'On',
                  cell: (a) => {
                    const to = link(a.entityType, a.entityId)
                    return to ? (
                      <a data-row href={to}>
                        {words(a.entityType)}
                      </a>
                    ) : (
                      words(a.entityType)
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
