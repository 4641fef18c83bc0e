import type { DashboardSummary } from '@slaw/client'
import { fillDays, lastDays, niceMax, stackedBars } from '../lib/chart'
import { money } from '../lib/format'

const W = 560
const H = 140

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
        <text x="0" y={H + 14} className="tick">
          {days[0]?.date.slice(5)}
        </text>
        <text x={W} y={H + 14} className="tick" textAnchor="end">
          {days[days.length - 1]?.date.slice(5)}
        </text>
      </svg>
      <figcaption className="legend">
        <span className="key seg-succeeded">succeeded</span>
        <span className="key seg-failed">failed</span>
        <span className="key seg-other">other (cancelled, timed out, still going)</span>
      </figcaption>
    </figure>
  )
}

export interface SpendWindow {
  label: string
  cents: number
}

/**
 * Spend over the API's rolling windows (5 hours, 24 hours, 7 days) and the month so far, against
 * the month's budget as a line. The API offers these sums; it has no per-day spend series.
 */
export function SpendChart({ windows, budgetCents }: { windows: SpendWindow[]; budgetCents: number | null }) {
  const max = niceMax(Math.max(budgetCents ?? 0, ...windows.map((w) => w.cents)))
  const rowH = 26
  const labelW = 70
  const height = windows.length * rowH + 8
  const scale = (c: number) => ((W - labelW - 80) * c) / max
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${W} ${height}`} role="img" aria-label={`Spend: ${windows.map((w) => `${w.label} ${money(w.cents)}`).join(', ')}; month budget ${budgetCents === null ? 'none' : money(budgetCents)}`}>
        {windows.map((w, i) => (
          <g key={w.label} transform={`translate(0 ${i * rowH + 4})`}>
            <text x="0" y="15" className="tick">
              {w.label}
            </text>
            <rect x={labelW} y="3" width={Math.max(1, scale(w.cents))} height="16" className={budgetCents !== null && w.cents > budgetCents ? 'seg-failed' : 'seg-spend'} />
            <text x={labelW + scale(w.cents) + 6} y="15" className="tick num">
              {money(w.cents)}
            </text>
          </g>
        ))}
        {budgetCents !== null ? <line x1={labelW + scale(budgetCents)} x2={labelW + scale(budgetCents)} y1="0" y2={height} className="budget-line" /> : null}
      </svg>
      <figcaption className="legend">
        {budgetCents !== null ? <span className="key budget">month budget {money(budgetCents)}</span> : <span className="muted">No month budget is set for this squad.</span>}
      </figcaption>
    </figure>
  )
}
