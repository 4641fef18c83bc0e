import type { Test } from 'tap'
import { createInstance, type SlawInstance } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'
import { freshDatabase } from './backends.js'
import { operatorToken, testAdapters, testMasterKey, type TestApi } from './instance.js'

/** Runs the queued routine jobs on this node, the way the job runner would; returns how many runs they held. */
export async function drain(instance: SlawInstance, worker = 'test-worker'): Promise<number> {
  let n = 0
  for (;;) {
    const jobs = await instance.storage.jobs.claim(['routine_run'], worker, 60_000, 50)
    if (!jobs.length) return n
    for (const job of jobs) {
      const result = await instance.services.routines.runJob(job)
      await instance.storage.jobs.complete(job.id, worker, result)
      n += Number(result.runs)
    }
  }
}

export async function scheduled(api: TestApi, squadId: string, routine: Record<string, unknown>, cronExpression: string, timezone = 'UTC') {
  const r = await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'Scheduled', ...routine })
  if (r.status !== 201) throw new Error(JSON.stringify(r.body))
  const trig = await api.call('POST', `/api/routines/${r.body.routine.id}/triggers`, { kind: 'schedule', cronExpression, timezone })
  if (trig.status !== 201) throw new Error(JSON.stringify(trig.body))
  return { routine: r.body.routine, trigger: trig.body.trigger }
}

export const runsOf = async (api: TestApi, routineId: string) => (await api.call('GET', `/api/routines/${routineId}/runs`)).body.runs as any[]

export async function routineWithAssignee(api: TestApi, routineExtra: Record<string, unknown> = {}) {
  const { squadId, agentId, agentToken } = await api.seed()
  const res = await api.call('POST', `/api/squads/${squadId}/routines`, {
    title: 'Deploy {{service}}',
    assigneeAgentId: agentId,
    concurrencyPolicy: 'always_enqueue',
    variables: [{ name: 'service', defaultValue: 'web' }],
    ...routineExtra,
  })
  if (res.status !== 201) throw new Error(JSON.stringify(res.body))
  return { squadId, agentId, agentToken, routine: res.body.routine }
}

export async function addTrigger(api: TestApi, routineId: string, body: Record<string, unknown>) {
  const res = await api.call('POST', `/api/routines/${routineId}/triggers`, body)
  if (res.status !== 201) throw new Error(`trigger: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body as { trigger: any; secret?: string }
}

/** POSTs a raw body to a public fire URL, with no API key. */
export function fire(api: TestApi, url: string, body: string, headers: Record<string, string> = {}) {
  return api.call('POST', url, body, null, { 'content-type': 'application/json', ...headers })
}

/**
 * Two instances (nodes) on one fresh PostgreSQL database, on the test clock, without job runners:
 * the tests drive jobs themselves. Closed and dropped at the test's end.
 */
export async function twoPgNodes(t: Test, clock: { now: Date }): Promise<SlawInstance[]> {
  const db = await freshDatabase()
  const nodes: SlawInstance[] = []
  for (let i = 0; i < 2; i++) {
    nodes.push(
      await createInstance({
        storage: pgStorage({ url: db.url, max: 4 }),
        operatorKey: operatorToken,
        masterKey: testMasterKey,
        adapters: testAdapters,
        logger: false,
        jobs: false,
        now: () => clock.now,
      }),
    )
  }
  t.teardown(async () => {
    for (const n of nodes) await n.close()
    await db.dispose()
  })
  return nodes
}
