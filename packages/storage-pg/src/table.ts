import type { ColumnType, Generated, RawBuilder } from 'kysely'

/** A timestamp the application writes (a Date or an ISO string) and may leave to its default. */
export type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>
/** Set once on insert (usually by the default), never updated. */
type CreatedAt = ColumnType<Date, Date | string | undefined, never>
/** jsonb columns are written through `json()` (see sql-helpers.ts), never as raw JS values. */
type Json<T> = ColumnType<T, RawBuilder<unknown>, RawBuilder<unknown>>
/** A jsonb column with a default: `json()` or nothing on insert. */
type JsonWithDefault<T> = ColumnType<T, RawBuilder<unknown> | undefined, RawBuilder<unknown>>
/** Counters that SQL adds to; never written as plain values by the application. */
export type Counter = ColumnType<number, number | undefined, number | RawBuilder<unknown>>

/** Which of a record's fields are not plain columns. */
interface TableSpec {
  /** Columns with a database default: optional on insert. */
  generated?: string
  /** jsonb columns. */
  json?: string
  /** Fields that are no column of the table (computed on read, or spread over several columns). */
  omit?: string
}

type Keys<S extends TableSpec, K extends keyof TableSpec> = S[K] extends string ? S[K] : never

type Column<S extends TableSpec, K, T> = K extends 'createdAt'
  ? CreatedAt
  : K extends 'updatedAt'
    ? Timestamp
    : K extends Keys<S, 'json'>
      ? (K extends Keys<S, 'generated'> ? JsonWithDefault<T> : Json<T>) | (null extends T ? null : never)
      : K extends Keys<S, 'generated'>
        ? Generated<T>
        : T

/**
 * A table as Kysely sees it, derived from the core record it stores (camelCase: the CamelCasePlugin
 * maps to snake_case columns). Each field of the record is a column of the same type, except that
 * `createdAt` is set on insert and never updated, `updatedAt` is a `Timestamp`, and the fields the
 * spec names have defaults, are jsonb or are not columns. `Columns` replaces fields whose column
 * differs in another way and adds the columns only storage knows (counters, search vectors, secrets
 * the record never carries).
 */
export type Table<R, S extends TableSpec = {}, Columns = {}> = Flatten<Omit<{ [K in keyof R as K extends Keys<S, 'omit'> ? never : K]: Column<S, K, R[K]> }, keyof Columns> & Columns>

type Flatten<T> = { [K in keyof T]: T[K] }
