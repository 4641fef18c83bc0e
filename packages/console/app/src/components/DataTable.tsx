import type { ReactNode } from 'react'

/** One column: its header and what each row shows in it; `num` right-aligns tabular figures. */
export interface Column<T> {
  header: ReactNode
  cell: (row: T) => ReactNode
  num?: boolean
  /** Extra cell class (`mono small`, …). */
  className?: string
  /** The cell's title attribute (an exact time behind a relative one). */
  title?: (row: T) => string | undefined
}

function classes(...names: Array<string | false | undefined>): string | undefined {
  const joined = names.filter(Boolean).join(' ')
  return joined || undefined
}

/**
 * The console's one table: a card-wide scroller, a caption for screen readers, column headers,
 * rows. Every page's list (issues, activity, costs, budgets) is one of these, so they read, scroll
 * at 375 px and take `j`/`k` alike (rows carry their own `data-row` links).
 */
export function DataTable<T>({ caption, columns, rows, rowKey, footer }: { caption: string; columns: Column<T>[]; rows: readonly T[]; rowKey: (row: T) => string; footer?: ReactNode }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c, i) => (
              <th key={i} scope="col" className={c.num ? 'num' : undefined}>
                {c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)}>
              {columns.map((c, i) => (
                <td key={i} className={classes(c.num && 'num', c.className)} title={c.title?.(row)}>
                  {c.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {footer}
    </div>
  )
}
