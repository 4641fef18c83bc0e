import { useQuery } from '@tanstack/react-query'
import { Empty, PageTitle, Query, Status } from '../components/ui'
import { unwrap } from '../lib/api'
import { ago, exactTime, words } from '../lib/format'
import { useApi } from '../state'

/** Names, providers and versions only: the API never sends a secret's value, and neither does this page. */
export function SecretsPage({ squadId }: { squadId: string }) {
  const api = useApi()
  const secrets = useQuery({
    queryKey: ['squad', squadId, 'secrets'],
    queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/secrets', { params: { path: { squadId } } })).secrets,
  })
  return (
    <>
      <PageTitle>Secrets</PageTitle>
      <Query query={secrets} label="secrets">
        {(list) =>
          list.length === 0 ? (
            <Empty title="No secrets in this squad.">Add one with slaw secret set or POST /api/squads/&#123;squadId&#125;/secrets; agents bind them by reference.</Empty>
          ) : (
            <div className="table-wrap">
              <table className="table">
                <caption className="visually-hidden">Secrets</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Key</th>
                    <th scope="col">Provider</th>
                    <th scope="col">Status</th>
                    <th scope="col" className="num">
                      Version
                    </th>
                    <th scope="col">Rotated</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((s) => (
                    <tr key={s.id}>
                      <td>{s.name}</td>
                      <td className="mono small">{s.key}</td>
                      <td>
                        {s.provider} <span className="muted small">{words(s.managedMode)}</span>
                      </td>
                      <td>
                        <Status value={s.status} />
                      </td>
                      <td className="num">{s.latestVersion}</td>
                      <td className="small" title={exactTime(s.lastRotatedAt)}>
                        {s.lastRotatedAt ? ago(s.lastRotatedAt) : 'never'}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Query>
    </>
  )
}
