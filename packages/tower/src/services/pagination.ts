import { invalidPayload } from '../errors.js'

/** Admin lists: `limit` (default 100, at most 500) and an opaque keyset `cursor` from the previous page. */
const DEFAULT_PAGE_SIZE = 100
const MAX_PAGE_SIZE = 500

export interface PageQuery {
  limit?: number | undefined
  cursor?: string | undefined
}

export interface Page<T> {
  items: T[]
  nextCursor: string | null
}

export function pageSize(query: PageQuery): number {
  return Math.min(Math.max(query.limit ?? DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE)
}

function encodeCursor(values: Array<string | number>): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url')
}

/** The keyset values of a cursor, checked against the expected kinds; a cursor that does not parse is a 400. */
export function decodeCursor<T extends Array<'string' | 'number'>>(cursor: string | undefined, kinds: [...T]): { [K in keyof T]: T[K] extends 'number' ? number : string } | null {
  if (cursor === undefined || cursor === '') return null
  let values: unknown
  try {
    values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    values = null
  }
  if (!Array.isArray(values) || values.length !== kinds.length || !values.every((v, i) => typeof v === kinds[i])) {
    throw invalidPayload('The cursor is not valid; pass the nextCursor of the previous page.', [{ path: '/querystring/cursor', message: 'is not a valid cursor' }])
  }
  return values as never
}

/** Fetch `size + 1` rows, give back `size` and a cursor to the rest when there is more. */
export function toPage<R, T>(rows: R[], size: number, map: (row: R) => T, cursorOf: (row: R) => Array<string | number>): Page<T> {
  const more = rows.length > size
  const kept = more ? rows.slice(0, size) : rows
  return { items: kept.map(map), nextCursor: more ? encodeCursor(cursorOf(kept[kept.length - 1]!)) : null }
}
