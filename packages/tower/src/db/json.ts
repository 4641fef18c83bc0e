import { sql, type RawBuilder } from 'kysely'

/**
 * A jsonb value for SQL. It travels as text and is cast in SQL: postgres.js would JSON-encode a
 * string bound to a jsonb parameter a second time, and PGlite serialises differently again.
 */
export function json(value: unknown): RawBuilder<unknown> {
  return sql`(${JSON.stringify(value)}::text)::jsonb`
}
