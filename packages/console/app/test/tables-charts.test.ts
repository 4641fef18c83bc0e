import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import { DataTable } from '../src/components/DataTable'
import { monthDays, monthToDate, stackedBars } from '../src/lib/chart'
import { costColumns } from '../src/pages/Costs'

describe('the one table', () => {
  it('draws a caption, headers and one row per item, figures right-aligned', () => {
    const html = renderToStaticMarkup(
      createElement(DataTable<{ id: string; n: number }>, {
        caption: 'Things',
        rows: [
          { id: 'a', n: 1 },
          { id: 'b', n: 2000 },
        ],
        rowKey: (r) => r.id,
        columns: [
          { header: 'Name', cell: (r) => r.id, title: (r) => `the ${r.id}` },
          { header: 'Count', cell: (r) => r.n, num: true, className: 'small' },
        ],
      }),
    )
    expect(html).toContain('<caption class="visually-hidden">Things</caption>')
    expect(html).toContain('<th scope="col" class="num">Count</th>')
    expect(html).toContain('<td title="the b">b</td><td class="num small">2000</td>')
    expect(html.match(/<tr>/g)).toHaveLength(3)
  })
  it('shows cost rows with metered, subscription and unpriced apart', () => {
    const row = { model: 'gpt-5', costCents: 1234, inputTokens: 100, cachedInputTokens: 50, cacheWriteTokens: 0, outputTokens: 10, subscriptionTokens: 0, unpricedTokens: 7, events: 2 }
    const cells = costColumns<typeof row>().map((c) => [c.header, c.cell(row)])
    expect(cells).toEqual([
      ['Metered', '$12.34'],
      ['Tokens', '160'],
      ['Subscription', '0'],
      ['Unpriced', '7'],
    ])
  })
})

describe('spend by day against the month budget', () => {
  it('lists every UTC day of a month', () => {
    expect(monthDays('2026-02')).toHaveLength(28)
    expect(monthDays('2028-02')).toHaveLength(29)
    expect(monthDays('2026-12').at(-1)).toBe('2026-12-31')
  })
  it("stacks each day's spend on the days before it; days to come have no bar", () => {
    const rows = monthToDate(
      [
        { day: '2026-02-01', costCents: 100 },
        { day: '2026-02-02', costCents: 0 },
        { day: '2026-02-03', costCents: 250 },
      ],
      '2026-02',
    )
    expect(rows).toHaveLength(28)
    expect(rows.slice(0, 3).map((r) => [r.toDate, r.segments.map((s) => s.value)])).toEqual([
      [100, [0, 100]],
      [100, [100, 0]],
      [350, [100, 250]],
    ])
    expect(rows[3]).toMatchObject({ future: true, segments: [] })
  })
  it('makes room for a budget above the spend', () => {
    const { max } = stackedBars([{ label: 'd', segments: [{ key: 'day', value: 30 }] }], 100, 50, 0, 400)
    expect(max).toBe(500)
  })
})
