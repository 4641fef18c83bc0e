import { Type } from '@sinclair/typebox'
import { Timestamp } from './common.js'

/** `POST /api/console/session`: the Operator key, exchanged for a session cookie; never stored. */
export const ConsoleSignInBody = Type.Object({ operatorKey: Type.String({ minLength: 1, maxLength: 512 }) }, { $id: 'ConsoleSignIn', title: 'ConsoleSignIn', additionalProperties: false })

/** A console session as the browser may see it: when it ends. The token travels only in the cookie. */
export const ConsoleSessionSchema = Type.Object({ session: Type.Object({ expiresAt: Timestamp }) }, { $id: 'ConsoleSession', title: 'ConsoleSession' })

export const ConsoleSessionsRevoked = Type.Object({ ok: Type.Literal(true), revoked: Type.Integer({ minimum: 0 }) }, { $id: 'ConsoleSessionsRevoked', title: 'ConsoleSessionsRevoked' })
