import { sql, type RawBuilder } from 'kysely'
import { UniqueViolation } from '@slaw/core'

/**
 * jsonb parameters go over the wire as text and are cast in SQL, so postgres.js and PGlite (which
 * serialise JS values differently) store exactly the same thing.
 */
export function json(value: unknown): RawBuilder<unknown> {
  return sql`(${JSON.stringify(value)}::text)::jsonb`
}

/**
 * Rows for an `insert … select` as ONE parameter: a JSON array read back with jsonb_to_recordset.
 * A multi-row VALUES list costs a bind parameter per cell (encoded one by one by the driver, and
 * by PGlite's JavaScript protocol layer) and a statement text per row count (a prepared statement
 * each); this costs one string and one statement text whatever the batch size. `columns` are
 * (snake_case column, SQL type) pairs; each row is an object keyed by those names (Dates become ISO
 * strings, which timestamptz reads back exactly). `where` keeps every row or none (a statement's guard).
 */
export function recordset(rows: Array<Record<string, unknown>>, columns: ReadonlyArray<readonly [string, string]>, where?: RawBuilder<unknown>): RawBuilder<unknown> {
  const names = columns.map(([c]) => c).join(', ')
  const types = columns.map(([c, t]) => `${c} ${t}`).join(', ')
  return sql`select ${sql.raw(names)} from jsonb_to_recordset((${JSON.stringify(rows)}::text)::jsonb) as x(${sql.raw(types)})${where ? sql` where ${where}` : sql``}`
}

export const now = (): RawBuilder<Date> => sql<Date>`now()`

/**
 * The visibility horizon: every transaction with a txid below it has ended (committed or rolled
 * back), so rows they wrote are final and no row written later can sort before them. The outbox
 * publishes, and the event feed reads, only below it (docs/architecture.md, "The outbox").
 */
export const visibilityHorizon = (): RawBuilder<string> => sql<string>`pg_snapshot_xmin(pg_current_snapshot())::text::bigint`

/** Priority order for sorting: critical first. */
export const priorityRank: Record<string, number> = { critical: 0, high: 1, medium: 2, low: 3 }

/** Maps PostgreSQL's unique_violation (23505) to the driver-neutral UniqueViolation. */
function mapUniqueViolation(err: unknown): never {
  const e = err as { code?: string; constraint_name?: string; constraint?: string; message?: string }
  if (e && e.code === '23505') {
    const name = e.constraint_name ?? e.constraint ?? /constraint "([^"]+)"/.exec(e.message ?? '')?.[1] ?? 'unknown'
    throw new UniqueViolation(name)
  }
  throw err
}

export async function guardUnique<T>(p: Promise<T>): Promise<T> {
  try {
    return await p
  } catch (err) {
    mapUniqueViolation(err)
  }
}
