import t from 'tap'
import { uuidv7 } from '@slaw/core'
import { eachBackend } from './helpers/instance.js'

/** Waits until `check` answers true; bounded by tap's timeout, no wall-clock margin. */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setImmediate(r))
}

// Regression: a job runner poll kicked from inside a transaction (every write that queues a wake
// does that) inherited the transaction's async context, so its claim ran inside that transaction or,
// once it had committed, failed with "Transaction is already committed" on every later poll: claimed
// jobs were never run and scheduled routines stalled until their leases ran out.
eachBackend(
  t,
  'background work kicked from inside a transaction never runs in it',
  async (t, api) => {
    const { storage, jobs } = api.instance
    await api.instance.app.ready() // the job runner starts with the app
    let ran = 0
    let handled!: () => void
    const handledOnce = new Promise<void>((r) => (handled = r))
    jobs.register('detach_probe', async () => {
      ran++
      handled()
      return { ok: true }
    })

    // After the commit: the poll kicked inside the transaction runs on its own.
    const first = await storage.jobs.enqueue({ id: uuidv7(), kind: 'detach_probe', squadId: null, payload: {} })
    await storage.transaction(async (tx) => {
      await tx.squads.list()
      jobs.kick()
    })
    await until(async () => (await storage.jobs.get(first.id))!.status === 'completed')
    t.equal(ran, 1, 'the job ran once')
    await new Promise((r) => setTimeout(r, 0))
    await storage.transaction(async (tx) => {
      await tx.squads.list()
    })
    t.pass('the storage is usable afterwards from every context')

    if (api.backend !== 'postgres') return // PGlite has one connection: nothing runs beside an open transaction.
    // While the transaction is still open: the job runs and completes beside it, and the
    // transaction's rollback takes nothing of the job's with it.
    const second = await storage.jobs.enqueue({ id: uuidv7(), kind: 'detach_probe', squadId: null, payload: {} })
    ran = 0
    const rollback = new Error('roll back')
    await t.rejects(
      storage.transaction(async (tx) => {
        await tx.squads.list()
        jobs.kick()
        await handledOnce.then(() => until(async () => (await api.instance.storage.jobs.get(second.id))?.status === 'completed'))
        throw rollback
      }),
      rollback,
    )
    t.equal((await storage.jobs.get(second.id))!.status, 'completed', 'the claim and the completion were not part of the rolled-back transaction')
    t.equal(ran, 1)
  },
  { jobs: { concurrency: 2, pollIntervalMs: 3_600_000 } },
)
