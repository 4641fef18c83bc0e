import type { ConcurrencyPolicy, RoutineTrigger } from '../../contracts/routines.js'

export interface FireTarget {
  trigger: RoutineTrigger
  /** The routine's policy when the trigger was read: it picks the lock a fire takes. */
  concurrencyPolicy: ConcurrencyPolicy
  /** The routine's assignee when the trigger was read: a group reads that agent with its locks. */
  assigneeAgentId: string | null
}

/**
 * Public fire targets by publicId, so a fire reads its trigger once, under the routine's lock,
 * instead of once more before. Only a hint: every fire compares the trigger it checked the
 * signature against with the row under the lock, and starts over from the database when they
 * differ (a write on another node). Bounded: the least recently used entry goes first.
 */
export class TriggerCache {
  private readonly entries = new Map<string, FireTarget>()

  constructor(private readonly max = 1_000) {}

  get(publicId: string): FireTarget | undefined {
    const hit = this.entries.get(publicId)
    if (hit) {
      // Map order is insertion order: re-inserting marks it the most recently used.
      this.entries.delete(publicId)
      this.entries.set(publicId, hit)
    }
    return hit
  }

  set(publicId: string, target: FireTarget): void {
    this.entries.delete(publicId)
    this.entries.set(publicId, target)
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!)
  }

  forget(publicId: string | null): void {
    if (publicId !== null) this.entries.delete(publicId)
  }

  get size(): number {
    return this.entries.size
  }
}
