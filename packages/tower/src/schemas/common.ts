import { Type, type TSchema } from '@sinclair/typebox'
import { ErrorBody } from '@slaw/core/ingest'

export { ErrorBody }

/** Error responses by status, for route schemas (and so the serializer never leaks extra fields). */
export const errorResponses = <S extends number>(...statuses: S[]): Record<S, typeof ErrorBody> => Object.fromEntries(statuses.map((s) => [s, ErrorBody])) as Record<S, typeof ErrorBody>

/** Path ids are plain strings on purpose: a malformed id answers 404 like an unknown one, never 500. */
export const IdParams = Type.Object({ id: Type.String() })

export const PageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  cursor: Type.Optional(Type.String({ maxLength: 500 })),
})

export const Page = <T extends TSchema>(item: T) => Type.Object({ items: Type.Array(item), nextCursor: Type.Union([Type.String(), Type.Null()]) })

export const Ok = Type.Object({ ok: Type.Literal(true) })
