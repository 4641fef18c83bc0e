import { sql, type RawBuilder } from 'kysely'
import { UniqueViolation } from '@slaw/core'

/**
 * jsonb parameters go over the wire as text and are cast in SQL, so postgres.js and PGlite (which
 * serialise JS values differently) store exactly the same thing.
 */
export function json(value: unknown): RawBuilder<unknown> {
  return sql`(${JSON.stringify(value)}::text)::jsonb`
}

export const now = (): RawBuilder<Date> => sql<Date>`now()`

/** Priority order for sorting: critical first. */
export const priorityRank: Record<string, number> = { critical: 0, high: 1, medium: 2, low: 3 }

/** Maps PostgreSQL's unique_violation (23505) to the driver-neutral UniqueViolation. */
export function mapUniqueViolation(err: unknown): never {
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
