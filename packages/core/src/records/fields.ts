import { Type, type TLiteral, type TUnion } from '@sinclair/typebox'

/**
 * Field schemas records are built from. A record schema is the one definition of its shape:
 * `StaticDecode<>` gives the type services use (timestamps as `Date`), `Static<>` the JSON the API
 * answers (timestamps as ISO strings), and the API's response schemas are cut from it.
 */

export const Uuid = Type.String({ format: 'uuid' })
// One definition with the ingest protocol's, which sits below every other layer.
export { Nullable } from '../ingest/common.js'

/** A timestamp: an ISO 8601 string in JSON, a `Date` once decoded. */
export const DateTime = Type.Transform(Type.String({ format: 'date-time' }))
  .Decode((s) => new Date(s))
  .Encode((d) => d.toISOString())

/** A JSON object of anything (jsonb columns such as payloads and settings). */
export const JsonObject = () => Type.Record(Type.String(), Type.Unknown())

/** One of the given strings; the list (`as const`) stays the source of the union. */
export const OneOf = <const T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v))) as unknown as TUnion<Literals<T>>
/** A tuple of literal schemas (a tuple, not an array, so that `StaticDecode` keeps the union). */
type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> }
