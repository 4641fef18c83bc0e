import { Type, type Static } from '@sinclair/typebox'

/**
 * Every error status and code of the ingest protocol. A tower answers with nothing else on
 * `/api/ingest/v1`; a client can switch on `code`.
 */
export const INGEST_ERRORS = {
  invalid_payload: { status: 400, message: 'The request body is not valid.' },
  unauthorized: { status: 401, message: 'Missing or invalid instance API key.' },
  enrollment_secret_required: { status: 401, message: 'This tower requires the pre-shared enrollment secret.' },
  enrollment_rejected: { status: 403, message: 'An operator rejected this instance.' },
  enrollment_revoked: { status: 403, message: 'This instance was revoked from the tower.' },
  enrollment_not_found: { status: 404, message: 'Unknown enrollment; enroll again.' },
  skill_not_found: { status: 404, message: 'The skill is unknown or not published.' },
  skills_managed_by_tower: { status: 409, message: 'Skills are managed by the control tower while enrolled.' },
  protocol_version_unsupported: { status: 426, message: 'This protocol version is not supported.' },
  rate_limited: { status: 429, message: 'Too many requests; back off and retry.' },
} as const satisfies Record<string, { status: number; message: string }>

export type IngestErrorCode = keyof typeof INGEST_ERRORS

/** `{error, code}`; validation failures add `details`. */
export const ErrorBody = Type.Object(
  {
    error: Type.String(),
    code: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { title: 'Error' },
)
export type ErrorBody = Static<typeof ErrorBody>
