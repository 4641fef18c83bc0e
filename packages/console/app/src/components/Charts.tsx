import type { DashboardSummary } from '@slaw/client'
import { fillDays, lastDays, monthToDate, stackedBars } from '../lib/chart'
import { money } from '../lib/format'

const W = 560
const H = 140

/** The first and last day under a chart's bars (MM-DD). */
function DayTicks({ first, last }: { first: string | undefined; last: string | undefined }) {
  return (
    <>
      <text x="0" y={H + 14} className="tick">
        {first?.slice(5)}
      </text>
      <text x={W} y={H + 14} className="tick" textAnchor="end">
        {last?.slice(5)}
      </text>
    </>
  )
}

/** Fourteen days of runs by outcome, stacked (succeeded, failed, other), from the dashboard. */
export function RunsChart({ activity }: { activity: DashboardSummary['runActivity'] }) {
  const days = fillDays(activity, lastDays(14), (date) => ({ date, succeeded: 0, failed: 0, other: 0, total: 0 }))
  const { bars, max } = stackedBars(
    days.map((d) => ({ label: d.date, segments: [{ key: 'succeeded', value: d.succeeded }, { key: 'failed', value: d.failed }, { key: 'other', value: d.other }] })),
    W,
    H,
    6,
  )
  const total = days.reduce((s, d) => s + d.total, 0)
  const failed = days.reduce((s, d) => s + d.failed, 0)
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${W} ${H + 18}`} role="img" aria-label={`Runs over the last 14 days: ${total} in all, ${failed} failed`}>
        <line x1="0" x2={W} y1={H} y2={H} className="axis" />
        <text x="0" y="10" className="tick">
          {max}
        </text>
        {bars.map((b) => (
          <g key={b.label}>
            <title>{`${b.label}: ${b.segments.map((s) => `${s.value} ${s.key}`).join(', ')}`}</title>
            {b.segments.map((s) => (s.height > 0 ? <rect key={s.key} x={b.x} y={s.y} width={b.width} height={s.height} className={`seg-${s.key}`} /> : null))}
          </g>
        ))}
        <DayTicks first={days[0]?.date} last={days[days.length - 1]?.date} />
      </svg>
      <figcaption className="legend">
        <span className="key seg-succeeded">succeeded</span>
        <span className="key seg-failed">failed</span>
        <span className="key seg-other">other (cancelled, timed out, still going)</span>
      </figcaption>
    </figure>
  )
}

/**
 * The month's spend by UTC day against the month's budget: each day's bar is the month to date at
 * its end, the day's own spend on top of the days before it, and the budget a dashed line.
 */
export function MonthSpendChart({ month, days, budgetCents }: { month: string; days: { day: string; costCents: number }[]; budgetCents: number | null }) {
  const rows = monthToDate(days, month)
  const { bars, max } = stackedBars(rows, W, H, 4, budgetCents ?? 0)
  const past = rows.filter((r) => !r.future)
  const toDate = past[past.length - 1]?.toDate ?? 0
  const budgetY = budgetCents === null ? null : H - (budgetCents / max) * H
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${W} ${H + 18}`} role="img" aria-label={`Spend by day in ${month}: ${money(toDate)} to date; month budget ${budgetCents === null ? 'none' : money(budgetCents)}`}>
        <line x1="0" x2={W} y1={H} y2={H} className="axis" />
        <text x="0" y="10" className="tick">
          {money(max)}
        </text>
        {bars.map((b, i) =>
          rows[i]!.future ? null : (
            <g key={b.label}>
              <title>{`${b.label}: ${money(rows[i]!.segments[1]!.value)} that day, ${money(rows[i]!.toDate)} month to date`}</title>
              {b.segments.map((s) => (s.height > 0 ? <rect key={s.key} x={b.x} y={s.y} width={b.width} height={s.height} className={s.key === 'day' ? 'seg-spend' : 'seg-before'} /> : null))}
            </g>
          ),
        )}
        {budgetY !== null ? <line x1="0" x2={W} y1={budgetY} y2={budgetY} className="budget-line" /> : null}
        <DayTicks first={rows[0]?.label} last={rows[rows.length - 1]?.label} />
      </svg>
      <figcaption className="legend">
        <span className="key seg-spend">that day</span>
        <span className="key seg-before">earlier days</span>
        {budgetCents !== null ? <span className="key budget">month budget {money(budgetCents)}</span> : <span className="muted">No month budget is set for this squad.</span>}
      </figcaption>
    </figure>
  )
}
