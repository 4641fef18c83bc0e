/**
 * Group commit: writes submitted while one batch is being committed wait and go together in the
 * next one, so under concurrency N requests cost one transaction instead of N. The first write of a
 * quiet moment waits only for the end of the current event-loop turn (see `submit`).
 *
 * `commit(items)` answers one settled result per item, in order: one item's refusal (a validation
 * error) never fails the others. If the batch itself fails (a database error), every item is
 * retried alone through `alone`, so one bad write cannot take its neighbours down with it.
 */
export class GroupCommit<T, R> {
  private pending: Array<{ item: T; resolve: (r: R) => void; reject: (e: unknown) => void }> = []
  private draining = false

  constructor(
    private readonly commit: (items: T[]) => Promise<Array<PromiseSettledResult<R>>>,
    private readonly alone: (item: T) => Promise<R>,
    private readonly maxBatch = 64,
  ) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject })
      if (!this.draining) {
        this.draining = true
        // The first batch waits for the end of this event-loop turn, so that every request whose
        // bytes arrived in it joins. Without the wait an embedded database, which answers within
        // microtasks, would finish each write before the next request was even parsed: batches of one.
        setImmediate(() => void this.drain())
      }
    })
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length) {
        const batch = this.pending.splice(0, this.maxBatch)
        let results: Array<PromiseSettledResult<R>>
        try {
          results = await this.commit(batch.map((b) => b.item))
        } catch (err) {
          results = batch.length === 1 ? [{ status: 'rejected', reason: err }] : await Promise.allSettled(batch.map((b) => this.alone(b.item)))
        }
        batch.forEach((b, i) => {
          const r = results[i]!
          if (r.status === 'fulfilled') b.resolve(r.value)
          else b.reject(r.reason)
        })
      }
    } finally {
      this.draining = false
    }
  }
}
