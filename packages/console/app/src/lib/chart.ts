// Geometry for the overview's plain-SVG charts: kept apart from the markup so it can be tested.

export interface Segment {
  key: string
  value: number
}
export interface StackedBar {
  label: string
  total: number
  segments: (Segment & { y: number; height: number })[]
  x: number
  width: number
}

/** A "nice" axis maximum at or above `max`: 1, 2, 5 × 10ⁿ (never 0, so empty charts still draw). */
export function niceMax(max: number): number {
  if (!(max > 0)) return 1
  const exp = 10 ** Math.floor(Math.log10(max))
  for (const m of [1, 2, 5, 10]) if (m * exp >= max) return m * exp
  return 10 * exp
}

/**
 * Stacked bars laid out in a width × height box, segments bottom-up in the given order. The axis
 * reaches at least `atLeast` (a budget line drawn over the bars must fit too).
 */
export function stackedBars(rows: { label: string; segments: Segment[] }[], width: number, height: number, gap = 2, atLeast = 0): { bars: StackedBar[]; max: number } {
  const totals = rows.map((r) => r.segments.reduce((s, x) => s + x.value, 0))
  const max = niceMax(Math.max(atLeast, ...totals))
  const slot = rows.length ? width / rows.length : width
  const bars = rows.map((row, i) => {
    let y = height
    const segments = row.segments.map((s) => {
      const h = (s.value / max) * height
      y -= h
      return { ...s, y, height: h }
    })
    return { label: row.label, total: totals[i]!, segments, x: i * slot + gap / 2, width: Math.max(1, slot - gap) }
  })
  return { bars, max }
}

/** The last `days` UTC dates ending today, oldest first, as YYYY-MM-DD. */
export function lastDays(days: number, now = new Date()): string[] {
  const out: string[] = []
  for (let i = days - 1; i >= 0; i--) out.push(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - i)).toISOString().slice(0, 10))
  return out
}

/** Fills days the API left out (no runs) with zeros, so the chart always shows the whole span. */
export function fillDays<T extends { date: string }>(rows: T[], days: string[], empty: (date: string) => T): T[] {
  const byDate = new Map(rows.map((r) => [r.date, r]))
  return days.map((d) => byDate.get(d) ?? empty(d))
}

/** Every UTC day of a month (`YYYY-MM`), as YYYY-MM-DD. */
export function monthDays(month: string): string[] {
  const [y, m] = month.split('-').map(Number) as [number, number]
  const out: string[] = []
  for (let d = new Date(Date.UTC(y, m - 1, 1)); d.getUTCMonth() === m - 1; d = new Date(d.getTime() + 86_400_000)) out.push(d.toISOString().slice(0, 10))
  return out
}

/**
 * The month's spend as it grew: one bar per day of the month, the spend of the days before it
 * (`before`) under the day's own (`day`), so the last bar is the month to date and can be read
 * against the budget line. Days still to come have no bar. Every figure is the API's (by-day).
 */
export function monthToDate(days: { day: string; costCents: number }[], month: string): { label: string; segments: Segment[]; toDate: number; future: boolean }[] {
  const byDay = new Map(days.map((d) => [d.day, d.costCents]))
  const last = days.length ? days[days.length - 1]!.day : ''
  let before = 0
  return monthDays(month).map((label) => {
    const future = label > last
    const day = byDay.get(label) ?? 0
    const row = { label, segments: future ? [] : [{ key: 'before', value: before }, { key: 'day', value: day }], toDate: before + day, future }
    before += day
    return row
  })
}
