import type { TowerClientContext } from '@slaw/core'
import { IngestError } from './http.js'
import type { ResolvedOptions } from './options.js'
import type { StateStore } from './state.js'
import type { WireOptions } from './wire.js'

/**
 * What the client's parts (enrollment, heartbeat, sync, directives, skills, live channel) share:
 * the instance, the stored state, the options, and the signal that cuts the call in flight short
 * when an Operator acts or the client closes.
 */
export interface Reporter {
  readonly ctx: TowerClientContext
  readonly store: StateStore
  readonly options: ResolvedOptions
  readonly signal: AbortSignal
  readonly stopped: boolean
  readonly wire: WireOptions
}

/** The stored form of the last error (`lastError` in GET /api/tower). */
export function errorRecord(err: unknown): { code: string; message: string; at: string } {
  return {
    code: err instanceof IngestError ? err.code : 'internal_error',
    message: err instanceof Error ? err.message : String(err),
    at: new Date().toISOString(),
  }
}

/** Error fields for a log line: name and message only (never a request with its headers). */
export function errInfo(err: unknown): { name: string; message: string } {
  return err instanceof Error ? { name: err.name, message: err.message } : { name: 'Error', message: String(err) }
}

/** The tower refused the batch's content (400, 422) or size (413): halving it finds what it refuses. */
export function refusedAsInvalid(err: unknown): err is IngestError {
  return err instanceof IngestError && (err.status === 400 || err.status === 413 || err.status === 422)
}

/** Refused credentials or protocol: the cycle's own error handling decides (re-enroll, stop, wait). */
export function endsTheCycle(err: unknown): boolean {
  return err instanceof IngestError && (err.status === 401 || err.status === 403 || err.status === 426)
}

/** A 401 other than a missing enrollment secret: the tower does not take our key any more. */
export function isCredentialLost(err: IngestError): boolean {
  return err.status === 401 && err.code !== 'enrollment_secret_required'
}
