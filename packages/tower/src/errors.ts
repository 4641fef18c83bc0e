import { CodedError, errorCodes, type ErrorDetail } from '@slaw/core'
import { INGEST_ERRORS } from '@slaw/core/ingest'

/**
 * Every error the tower answers with comes from this registry: the ingest protocol's codes (shared
 * with the tower client) plus the few the admin API adds, as core defines them. docs/tower.md lists them.
 */
export const towerErrors = {
  ...INGEST_ERRORS,
  not_found: errorCodes.not_found,
  forbidden: errorCodes.forbidden,
  invalid_state: errorCodes.invalid_state,
  internal_error: errorCodes.internal_error,
} as const satisfies Record<string, { status: number; message: string }>

export type TowerErrorCode = keyof typeof towerErrors

export type { ErrorDetail }

/** The tower's errors: core's one coded error class over the tower's registry. */
export class TowerError extends CodedError<TowerErrorCode> {
  constructor(code: TowerErrorCode, message?: string, details?: ErrorDetail[]) {
    super(towerErrors, code, message, details)
    this.name = 'TowerError'
  }
}

export const invalidPayload = (message: string, details?: ErrorDetail[]): TowerError => new TowerError('invalid_payload', message, details)
export const notFound = (what: string): TowerError => new TowerError('not_found', `${what} not found.`)
