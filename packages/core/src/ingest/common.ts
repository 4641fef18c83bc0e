import { Type, type TObject, type TSchema } from '@sinclair/typebox'
import { PROTOCOL_VERSION } from './constants.js'

/** ISO 8601 date-time with a zone, as every ingest timestamp. */
export const Timestamp = Type.String({ format: 'date-time', maxLength: 64 })

/** An instance-local id (our UUIDs): 1 to 64 characters. */
export const LocalId = Type.String({ minLength: 1, maxLength: 64 })

/** A short label: statuses, roles, kinds. */
export const Label = Type.String({ minLength: 1, maxLength: 100 })

/** A display text: names and titles. */
export const Text = Type.String({ maxLength: 1000 })

/** A non-negative integer that stays exact in JavaScript. */
export const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })

/** A schema or null. The records and the tower use this one too. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/**
 * A field marked `?` on the wire. A receiver accepts it absent or null; a sender always writes the
 * key, null when empty: the reference tower rejects a batch whose nullable keys are missing
 * (docs/ingest-protocol.md). The tower client fills missing ones with null before sending.
 */
export const Maybe = <T extends TSchema>(schema: T) => Type.Optional(Nullable(schema))

/** Every ingest request body carries it; the tower checks it before anything else. */
export const ProtocolVersion = Type.Integer({ description: `ingest protocol version; this code speaks ${PROTOCOL_VERSION}` })

/**
 * A union of flat objects told apart by one literal property. The `discriminator` annotation lets a
 * validator that understands it (OpenAPI style) check only the matching member, which gives short
 * error messages; one that does not simply ignores it.
 */
export const DiscriminatedUnion = <T extends TObject[]>(propertyName: string, members: [...T], options: { $id?: string; title?: string } = {}) =>
  Type.Union(members, { ...options, discriminator: { propertyName } })
