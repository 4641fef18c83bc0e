import { Cron } from 'croner'
import { invalid } from '../../errors.js'

/**
 * Schedules: five-field cron in an IANA time zone, computed by croner (a maintained, dependency-free
 * library that evaluates patterns in any zone and is DST-safe: a wall-clock time skipped by a
 * spring-forward transition and one repeated by a fall-back transition each fire once).
 */

/** The catch-up cap of `enqueue_missed_with_cap` (25; docs/routines.md). */
export const missedRunCap = 25
/** A due-time scan stops after this many steps (a minutely schedule stopped for ~70 days). */
const maxScan = 100_000

function assertTimezone(timezone: string, path = '/timezone'): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone })
  } catch {
    throw invalid(path, `unknown time zone "${timezone}" (use an IANA name such as Europe/Berlin)`)
  }
}

/** Parses a five-field cron expression in `timezone`; 400 for anything else or a pattern that never fires. */
export function parseSchedule(cronExpression: string, timezone: string, now: Date): Cron {
  assertTimezone(timezone)
  const fields = cronExpression.trim().split(/\s+/)
  if (fields.length !== 5) throw invalid('/cronExpression', 'must be a five-field cron expression (minute hour day-of-month month day-of-week)')
  let cron: Cron
  try {
    cron = new Cron(fields.join(' '), { timezone, paused: true })
  } catch (err) {
    throw invalid('/cronExpression', `invalid cron expression: ${err instanceof Error ? err.message.replace(/^CronPattern: /, '') : String(err)}`)
  }
  if (!cron.nextRun(now)) throw invalid('/cronExpression', 'the cron expression never fires')
  return cron
}

/** The first due time strictly after `after`, or null when the pattern has none. */
export function nextFireAfter(cronExpression: string, timezone: string, after: Date): Date | null {
  return new Cron(cronExpression, { timezone, paused: true }).nextRun(after)
}

export interface FirePlan {
  /** Due times to fire now, oldest first. */
  fire: Date[]
  /** Due times dropped by the catch-up policy. */
  dropped: number
  /** The next due time after `now`, to store. */
  next: Date | null
}

/**
 * The due times in [from, now] of a schedule whose stored next due time is `from`. The latest due
 * time always fires (at the latest, now); of the earlier ones (missed while no node ran the
 * scheduler) `keep - 1` more fire, the most recent first: `skip_missed` keeps 1 (drops every missed
 * time but the latest), `enqueue_missed_with_cap` keeps 25.
 */
export function planFires(cronExpression: string, timezone: string, from: Date, now: Date, keep: number): FirePlan {
  const cron = new Cron(cronExpression, { timezone, paused: true })
  const window: Date[] = []
  let total = 0
  let t: Date | null = from
  for (let steps = 0; t && t.getTime() <= now.getTime() && steps < maxScan; steps++) {
    total++
    window.push(t)
    if (window.length > keep) window.shift()
    t = cron.nextRun(t)
  }
  return { fire: window, dropped: total - window.length, next: cron.nextRun(now) }
}

/**
 * The shortest interval, in seconds, between consecutive due times of the schedule over its next
 * `samples` due times from `now` (a burst such as `* 3 * * *` shows at its first two due times).
 */
export function minScheduleGapSec(cron: Cron, now: Date, samples = 200): number {
  const runs = cron.nextRuns(samples, now)
  let min = Infinity
  for (let i = 1; i < runs.length; i++) min = Math.min(min, (runs[i]!.getTime() - runs[i - 1]!.getTime()) / 1000)
  return min
}
