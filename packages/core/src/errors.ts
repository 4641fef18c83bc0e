/**
 * Every error slaw answers with comes from this registry: an HTTP status, a snake_case code
 * and a default message. `docs/errors.md` lists the same entries,
 * and a test keeps the two in step.
 */
export const errorCodes = {
  unauthorized: { status: 401, message: 'Missing or invalid bearer token.' },
  forbidden: { status: 403, message: 'This key may not do that.' },
  instance_not_enrolled: { status: 403, message: 'This instance is not enrolled with its control tower yet.' },
  not_found: { status: 404, message: 'Not found.' },
  invalid_payload: { status: 400, message: 'The request is not valid.' },
  sensitive_config_rejected: { status: 400, message: 'Provider configuration may not hold sensitive values.' },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  unsupported_media_type: { status: 415, message: 'Send JSON with Content-Type: application/json.' },
  invalid_state: { status: 422, message: 'That action is not valid in the current state.' },
  rate_limited: { status: 429, message: 'Too many requests; back off and retry.' },
  issue_checked_out: { status: 409, message: 'The issue is checked out by another agent; pick other work.' },
  project_paused: { status: 409, message: 'The issue belongs to a paused project.' },
  budget_exhausted: { status: 409, message: 'The budget is exhausted.' },
  tower_limit_reached: { status: 409, message: 'The fleet limit set by the control tower is reached.' },
  tower_not_configured: { status: 409, message: 'This instance has no tower client.' },
  slug_taken: { status: 409, message: 'That slug is already used by another squad.' },
  agent_name_taken: { status: 409, message: 'That agent name is already used in this squad.' },
  skill_key_taken: { status: 409, message: 'That skill key is already used in this squad.' },
  squad_archived: { status: 409, message: 'The squad is archived; its issues are read-only.' },
  revision_conflict: { status: 409, message: 'The resource changed since the given revision.' },
  skills_managed_by_tower: { status: 409, message: 'Skills are managed by the control tower while enrolled.' },
  agent_not_active: { status: 409, message: 'The agent is not active.' },
  conflict: { status: 409, message: 'The request conflicts with existing data.' },
  lock_unavailable: { status: 503, message: 'The lock service is unavailable; retry shortly.' },
  service_unavailable: { status: 503, message: 'The service is starting or draining; retry shortly.' },
  request_timeout: { status: 408, message: 'The request was not received in time.' },
  header_too_large: { status: 431, message: 'The request headers are too large.' },
  database_unavailable: { status: 503, message: 'The database is unavailable; retry shortly.' },
  internal_error: { status: 500, message: 'Internal error.' },
  secret_key_taken: { status: 409, message: 'That secret key is already used in this squad.' },
  secret_unavailable: { status: 409, message: 'The secret cannot be resolved.' },
  secret_provider_config_in_use: { status: 409, message: 'Secrets still use this provider configuration.' },
  routine_quota_exceeded: { status: 429, message: 'Agent keys have created as many routines in this squad as allowed.' },
  too_many_streams: { status: 429, message: 'This key has as many live event streams open as allowed; close one first.' },
  schedule_too_frequent: { status: 400, message: 'A schedule written by an agent key fires too often.' },
  skill_import_disabled: { status: 403, message: 'Skill imports from disk are off on this instance.' },
  skill_source_refused: { status: 403, message: 'That path may not be imported as a skill.' },
} as const satisfies Record<string, { status: number; message: string }>

export type ErrorCode = keyof typeof errorCodes

export interface ErrorDetail {
  path: string
  message: string
}

/** A registry of error codes: each with its HTTP status and default message. */
export type ErrorRegistry<C extends string = string> = Record<C, { status: number; message: string }>

/**
 * An error coded from a registry: its status and default message come from the registry, and it
 * answers as `{error, code, details?}`. The one error class of slaw: SlawError is it over
 * `errorCodes`; the tower (`@slaw/tower`) uses it over its own registry.
 */
export class CodedError<C extends string = string> extends Error {
  readonly code: C
  readonly statusCode: number
  readonly details: ErrorDetail[] | undefined

  constructor(registry: ErrorRegistry<C>, code: C, message?: string, details?: ErrorDetail[]) {
    super(message ?? registry[code].message)
    this.name = 'CodedError'
    this.code = code
    this.statusCode = registry[code].status
    this.details = details
  }

  toJSON(): { error: string; code: C; details?: ErrorDetail[] } {
    return this.details ? { error: this.message, code: this.code, details: this.details } : { error: this.message, code: this.code }
  }
}

/** The one error type services throw; the HTTP layer turns it into `{error, code, details?}`. */
export class SlawError extends CodedError<ErrorCode> {
  constructor(code: ErrorCode, message?: string, details?: ErrorDetail[]) {
    super(errorCodes, code, message, details)
    this.name = 'SlawError'
  }
}

export function isSlawError(err: unknown): err is SlawError {
  return err instanceof SlawError
}

export const notFound = (what = 'Resource'): SlawError => new SlawError('not_found', `${what} not found.`)
export const invalid = (path: string, message: string): SlawError => new SlawError('invalid_payload', message, [{ path, message }])
