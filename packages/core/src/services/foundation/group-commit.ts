import { detached } from './detached.js'

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
  private inFlight = 0
  private scheduled = false

  /**
   * `lanes` is how many batches may commit at once. With two, the next batch reads and writes
   * while the previous one waits for its commit, so HTTP turnaround and database time overlap
   * instead of alternating; writers of the same rows still queue on those rows' locks.
   */
  constructor(
    private readonly commit: (items: T[]) => Promise<Array<PromiseSettledResult<R>>>,
    private readonly alone: (item: T) => Promise<R>,
    private readonly maxBatch = 64,
    private readonly lanes = 1,
  ) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject })
      this.schedule()
    })
  }

  /**
   * A batch starts at the end of the event-loop turn, so that every request whose bytes arrived in
   * it joins. Without the wait an embedded database, which answers within microtasks, would finish
   * each write before the next request was even parsed: batches of one.
   */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.lanes || !this.pending.length) return
    this.scheduled = true
    // Detached: a batch is nobody's transaction, whatever context its first writer came from.
    setImmediate(
      detached(() => {
        this.scheduled = false
        while (this.inFlight < this.lanes && this.pending.length) {
          const batch = this.pending.splice(0, this.maxBatch)
          this.inFlight++
          void this.run(batch).finally(() => {
            this.inFlight--
            this.schedule()
          })
        }
      }),
    )
  }

  private async run(batch: Array<{ item: T; resolve: (r: R) => void; reject: (e: unknown) => void }>): Promise<void> {
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
}
