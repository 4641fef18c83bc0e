import { Type, type Static } from '@sinclair/typebox'
import { ProtocolVersion } from './common.js'

export const InstanceOs = Type.Union([Type.Literal('darwin'), Type.Literal('linux'), Type.Literal('win32')])

/** Who an instance is: the pair (machineId, instanceId) is its identity. */
export const InstanceIdentity = Type.Object({
  /** A salted hash of the machine: 8 to 128 characters. */
  machineId: Type.String({ minLength: 8, maxLength: 128 }),
  instanceId: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9_-]+$' }),
  hostname: Type.String({ minLength: 1, maxLength: 255 }),
  os: InstanceOs,
  slawVersion: Type.String({ minLength: 1, maxLength: 32 }),
})
export type InstanceIdentity = Static<typeof InstanceIdentity>

export const Capabilities = Type.Object({
  /** When false, issue titles are reduced to their issue key in every later sync payload. */
  reportIssueTitles: Type.Boolean({ default: true }),
  liveStream: Type.Boolean({ default: false }),
})
export type Capabilities = Static<typeof Capabilities>

export const EnrollmentStateSchema = Type.Union([Type.Literal('pending'), Type.Literal('active'), Type.Literal('rejected'), Type.Literal('revoked')])

/** POST /enroll. No key; a tower may require the pre-shared `enrollmentSecret` (or header `x-enrollment-secret`). */
export const EnrollRequest = Type.Object({
  protocolVersion: ProtocolVersion,
  instance: InstanceIdentity,
  capabilities: Type.Optional(
    Type.Object(
      {
        reportIssueTitles: Type.Optional(Type.Boolean({ default: true })),
        liveStream: Type.Optional(Type.Boolean({ default: false })),
      },
      { default: {} },
    ),
  ),
  enrollmentSecret: Type.Optional(Type.String({ maxLength: 512 })),
})
export type EnrollRequest = Static<typeof EnrollRequest>

/**
 * 200 when active (apiKey present, shown this once), 202 when pending. The same shape answers a poll;
 * apiKey appears exactly once over the life of an enrollment.
 */
export const EnrollResponse = Type.Object({
  enrollmentId: Type.String({ format: 'uuid' }),
  state: EnrollmentStateSchema,
  pollIntervalSec: Type.Integer({ minimum: 1 }),
  apiKey: Type.Optional(Type.String()),
})
export type EnrollResponse = Static<typeof EnrollResponse>

/** POST /enroll/poll. An id that is unknown (or not a UUID at all) answers 404 `enrollment_not_found`. */
export const PollRequest = Type.Object({
  protocolVersion: ProtocolVersion,
  enrollmentId: Type.String({ minLength: 1, maxLength: 128 }),
})
export type PollRequest = Static<typeof PollRequest>

export const PollResponse = EnrollResponse
export type PollResponse = Static<typeof PollResponse>
