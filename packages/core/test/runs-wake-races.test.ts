import t from 'tap'
import { addAgent } from './helpers/fixtures.js'
import { eachBackend } from './helpers/instance.js'

// Issue creates queue wakes while the job runner starts and finishes runs of the same squad: the
// run-activity day rollup once locked a shared counter row per day and status, and a create (holding
// its squad row) deadlocked against a run transition now and then (500s on PostgreSQL).
eachBackend(
  t,
  'wakes queued while runs of the same squad start and finish: every write succeeds',
  async (t, api) => {
    const statuses: number[] = []
    for (let round = 0; round < 12; round++) {
      const s = await api.seed(`Races ${round}`)
      const bob = await addAgent(api, s.squadId, 'bob')
      const creates = ['todo', 'blocked', 'in_review', 'todo', 'backlog', 'done', 'cancelled'].map((status, i) =>
        api.call('POST', `/api/squads/${s.squadId}/issues`, { title: `race ${i}`, status, priority: 'high', assigneeAgentId: i % 2 ? bob.id : s.agentId }),
      )
      for (const res of await Promise.all(creates)) statuses.push(res.status)
    }
    t.same([...new Set(statuses)], [201], 'every create answered 201')
    await api.instance.jobs.drain()
    const squads = (await api.call('GET', '/api/squads')).body.squads as Array<{ id: string }>
    let total = 0
    for (const sq of squads) {
      const days = (await api.call('GET', `/api/squads/${sq.id}/dashboard`)).body.runActivity as Array<{ total: number }>
      total += days.reduce((n, d) => n + d.total, 0)
    }
    // 7 issues per round; done and cancelled issues wake nobody: 5 runs a round.
    t.equal(total, 12 * 5, 'run activity counts each run once, whatever status it reached')
  },
  { jobs: { pollIntervalMs: 5 } },
)
