import { useQuery } from '@tanstack/react-query'
import { DataTable } from '../components/DataTable'
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
            <DataTable
              caption="Secrets"
              rows={list}
              rowKey={(s) => s.id}
              columns={[
                { header: 'Name', cell: (s) => s.name },
                { header: 'Key', cell: (s) => s.key, className: 'mono small' },
                {
                  header: 'Provider',
                  cell: (s) => (
                    <>
                      {s.provider} <span className="muted small">{words(s.managedMode)}</span>
                    </>
                  ),
                },
                { header: 'Status', cell: (s) => <Status value={s.status} /> },
                { header: 'Version', cell: (s) => s.latestVersion, num: true },
                { header: 'Rotated', cell: (s) => (s.lastRotatedAt ? ago(s.lastRotatedAt) : 'never'), className: 'small', title: (s) => exactTime(s.lastRotatedAt) },
              ]}
            />
          )
        }
      </Query>
    </>
  )
}
