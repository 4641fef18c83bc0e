import { useQuery } from '@tanstack/react-query'
import { Empty, PageTitle, Query } from '../components/ui'
import { unwrap } from '../lib/api'
import { ago, exactTime } from '../lib/format'
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
            {(agents.data ?? []).map((a) => (
              <option key={a.id} value={a.id}>
                {a.name}
              </option>
            ))}
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
            <div className="table-wrap">
              <table className="table">
                <caption className="visually-hidden">Activity</caption>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Who</th>
                    <th scope="col">Action</th>
                    <th scope="col">On</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((a) => {
                    const to = link(a.entityType, a.entityId)
                    return (
                      <tr key={a.id}>
                        <td className="num small" title={exactTime(a.createdAt)}>
                          {ago(a.createdAt)}
                        </td>
                        <td>{a.actorType === 'agent' ? agentName(a.actorId) : a.actorType}</td>
                        <td className="mono small">{a.action}</td>
                        <td>
                          {to ? (
                            <a data-row href={to}>
                              {a.entityType.replace(/_/g, ' ')}
                            </a>
                          ) : (
                            a.entityType.replace(/_/g, ' ')
                          )}
                        </td>
                      </tr>
                    )
                  })}
                </tbody>
              </table>
            </div>
          )
        }
      </Query>
    </>
  )
}
