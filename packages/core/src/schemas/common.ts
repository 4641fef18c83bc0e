import { Type } from '@sinclair/typebox'

export { Nullable, Uuid } from '../records/fields.js'
/** A timestamp in a body or a computed response; record fields use the records' `DateTime`. */
export const Timestamp = Type.String({ format: 'date-time' })

/**
 * Path ids are plain strings on purpose: a malformed UUID must answer 404 like an unknown one
 * (docs/errors.md), so the services check the shape, not the validator.
 */
export const IdParams = Type.Object({ id: Type.String({ maxLength: 200 }) })
export const SquadParams = Type.Object({ squadId: Type.String({ maxLength: 200 }) })

export const ErrorBody = Type.Object(
  {
    error: Type.String(),
    code: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { $id: 'ErrorBody', title: 'Error' },
)
const errorRef = Type.Ref('ErrorBody')

/** The error statuses every authenticated route may answer, for the OpenAPI document. */
export const errors = {
  400: errorRef,
  401: errorRef,
  403: errorRef,
  404: errorRef,
  409: errorRef,
  413: errorRef,
  422: errorRef,
  503: errorRef,
} as const

export const Ok = Type.Object({ ok: Type.Literal(true) })

/** Comma-separated list in a query string, e.g. `status=todo,blocked`. */
export const CommaList = (pattern: string) => Type.String({ pattern: `^(${pattern})(,(${pattern}))*$`, maxLength: 500 })
/** The items of a `CommaList` query value (its pattern has checked each one); undefined when absent. */
export const commaListItems = <T extends string>(value: string | undefined): T[] | undefined => (value ? (value.split(',') as T[]) : undefined)

export const iso = (d: Date): string => d.toISOString()
export const isoOrNull = (d: Date | null): string | null => (d ? d.toISOString() : null)
