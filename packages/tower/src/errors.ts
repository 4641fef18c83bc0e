import { INGEST_ERRORS } from '@slaw/core/ingest'

/**
 * Every error the tower answers with comes from this registry: the ingest protocol's codes (shared
 * with the tower client) plus the few the admin API adds. docs/tower.md lists them.
 */
export const towerErrors = {
  ...INGEST_ERRORS,
  not_found: { status: 404, message: 'Not found.' },
  invalid_state: { status: 422, message: 'That action is not valid in the current state.' },
  internal_error: { status: 500, message: 'Internal error.' },
} as const satisfies Record<string, { status: number; message: string }>

export type TowerErrorCode = keyof typeof towerErrors

export interface ErrorDetail {
  path: string
  message: string
}

/** The one error type the tower throws; the error handler turns it into `{error, code, details?}`. */
export class TowerError extends Error {
  readonly code: TowerErrorCode
  readonly statusCode: number
  readonly details: ErrorDetail[] | undefined

  constructor(code: TowerErrorCode, message?: string, details?: ErrorDetail[]) {
    super(message ?? towerErrors[code].message)
    this.name = 'TowerError'
    this.code = code
    this.statusCode = towerErrors[code].status
    this.details = details
  }

  toJSON(): { error: string; code: TowerErrorCode; details?: ErrorDetail[] } {
    return this.details ? { error: this.message, code: this.code, details: this.details } : { error: this.message, code: this.code }
  }
}

export const invalidPayload = (message: string, details?: ErrorDetail[]): TowerError => new TowerError('invalid_payload', message, details)
export const notFound = (what: string): TowerError => new TowerError('not_found', `${what} not found.`)
