import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { DataTable } from '../components/DataTable'
import { Empty, ErrorBox, PageTitle, Query, Section, Status } from '../components/ui'
import { unwrap } from '../lib/api'
import { ago, exactTime, words } from '../lib/format'
import { href } from '../lib/router'
import { useAgentName } from '../queries'
import { useApi } from '../state'

export function RoutinesPage({ squadId }: { squadId: string }) {
  const api = useApi()
  const agentName = useAgentName(squadId)
  const routines = useQuery({
    queryKey: ['squad', squadId, 'routines'],
    queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/routines', { params: { path: { squadId }, query: { limit: 200 } } })).routines,
  })
  return (
    <>
      <PageTitle>Routines</PageTitle>
      <Query query={routines} label="routines">
        {(list) =>
          list.length === 0 ? (
            <Empty title="No routines yet.">A routine opens an issue on a schedule or a webhook; create one with POST /api/squads/&#123;squadId&#125;/routines.</Empty>
          ) : (
            <DataTable
              caption="Routines"
              rows={list}
              rowKey={(r) => r.id}
              columns={[
                {
                  header: 'Routine',
                  cell: (r) => (
                    <a data-row href={href({ name: 'routine', squadId, id: r.id })}>
                      {r.title}
                    </a>
                  ),
                },
                { header: 'Status', cell: (r) => <Status value={r.status} /> },
                { header: 'Assignee', cell: (r) => (r.assigneeAgentId ? agentName(r.assigneeAgentId) : 'unassigned') },
                { header: 'Concurrency', cell: (r) => words(r.concurrencyPolicy), className: 'small' },
                { header: 'Updated', cell: (r) => ago(r.updatedAt), className: 'small', title: (r) => exactTime(r.updatedAt) },
              ]}
            />
          )
        }
      </Query>
    </>
  )
}

export function RoutinePage({ squadId, id }: { squadId: string; id: string }) {
  const api = useApi()
  const queryClient = useQueryClient()
  const routine = useQuery({ queryKey: ['routine', id], queryFn: async () => unwrap(await api.GET('/api/routines/{id}', { params: { path: { id } } })) })
  const runs = useQuery({
    queryKey: ['routine', id, 'runs'],
    queryFn: async () => unwrap(await api.GET('/api/routines/{id}/runs', { params: { path: { id }, query: { limit: 50 } } })).runs,
  })
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ['routine', id] })
    void queryClient.invalidateQueries({ queryKey: ['squad', squadId, 'routines'] })
  }
  const fire = useMutation({ mutationFn: async () => unwrap(await api.POST('/api/routines/{id}/run', { params: { path: { id } }, body: { source: 'manual' } })), onSuccess: refresh })
  const setStatus = useMutation({
    mutationFn: async (status: 'active' | 'paused') => unwrap(await api.PATCH('/api/routines/{id}', { params: { path: { id } }, body: { status } })),
    onSuccess: refresh,
  })
  return (
    <Query query={routine} label="the routine">
      {({ routine: r, triggers }) => (
        <>
          <PageTitle
            actions={
              <>
                <button type="button" onClick={() => fire.mutate()} disabled={fire.isPending || r.status !== 'active'}>
                  Fire now
                </button>
                {r.status === 'paused' ? (
                  <button type="button" className="ghost" onClick={() => setStatus.mutate('active')} disabled={setStatus.isPending}>
                    Resume
                  </button>
                ) : r.status === 'active' ? (
                  <button type="button" className="ghost" onClick={() => setStatus.mutate('paused')} disabled={setStatus.isPending}>
                    Pause
                  </button>
                ) : null}
              </>
            }
          >
            {r.title} <Status value={r.status} />
          </PageTitle>
          {fire.error || setStatus.error ? <ErrorBox error={fire.error ?? setStatus.error} /> : null}
          {fire.isSuccess ? (
            <p role="status" className="small">
              Fired: the run is listed below.
            </p>
          ) : null}
          {r.description ? <p className="prewrap">{r.description}</p> : null}
          <div className="grid2">
            <Section title="Triggers">
              {triggers.length === 0 ? (
                <Empty title="No triggers.">Without a trigger the routine only runs with Fire now.</Empty>
              ) : (
                <ul className="plain">
                  {triggers.map((t) => (
                    <li key={t.id}>
                      <strong>{t.label ?? words(t.kind)}</strong> <span className="muted small">({words(t.kind)}{t.enabled ? '' : ', disabled'})</span>
                      {t.cronExpression ? (
                        <span className="mono small">
                          {' '}
                          {t.cronExpression} {t.timezone ?? ''}
                        </span>
                      ) : null}
                      <div className="muted small">
                        {t.nextFireAt ? `next ${exactTime(t.nextFireAt)}` : 'no next fire'} · {t.lastFiredAt ? `last fired ${ago(t.lastFiredAt)}` : 'never fired'}
                      </div>
                    </li>
                  ))}
                </ul>
              )}
            </Section>
            <Section title="Last runs">
              <Query query={runs} label="runs">
                {(list) =>
                  list.length === 0 ? (
                    <Empty title="Not run yet." />
                  ) : (
                    <ul className="plain">
                      {list.map((run) => (
                        <li key={run.id}>
                          <Status value={run.status} /> <span className="small">{words(run.source)}</span>{' '}
                          <span className="muted small num" title={exactTime(run.createdAt)}>
                            {ago(run.createdAt)}
                          </span>
                          {run.issueId ? (
                            <>
                              {' '}
                              · <a href={href({ name: 'issue', squadId, id: run.issueId })}>issue</a>
                            </>
                          ) : null}
                          {run.error ? <div className="error small">{run.error}</div> : null}
                        </li>
                      ))}
                    </ul>
                  )
                }
              </Query>
            </Section>
          </div>
        </>
      )}
    </Query>
  )
}
