import { createSlawClient, type ApiError, type paths, type SlawClient } from '@slaw/client'
import type { Client } from 'openapi-fetch'

/**
 * Routes the console needs that the client's OpenAPI document does not list yet (the console's
 * session, an adapter's environment check, a run's stored live output). They are typed here in
 * the generated document's shape, so every call still goes through the one typed client.
 */
type NoParams = { query?: never; header?: never; path?: never; cookie?: never }
type IdParam<K extends string> = { query?: never; header?: never; path: { [P in K]: string }; cookie?: never }
type Json<T> = { headers: Record<string, unknown>; content: { 'application/json': T } }
type Errors = { 400: Json<ApiError>; 401: Json<ApiError>; 403: Json<ApiError>; 404: Json<ApiError>; 422: Json<ApiError>; 429: Json<ApiError> }
type Op<P, Res, Body = undefined> = {
  parameters: P
  responses: { 200: Json<Res> } & Errors
} & (Body extends undefined ? { requestBody?: never } : { requestBody: { content: { 'application/json': Body } } })

export interface EnvironmentCheck {
  adapterType: string
  ok: boolean
  checks: { name: string; status: 'ok' | 'warn' | 'fail'; message: string }[]
}
export interface RunOutputChunk {
  id: string
  stream: 'stdout' | 'stderr'
  text: string
  offset: number
  at: string
}
export interface RunOutput {
  runId: string
  status: string
  chunks: RunOutputChunk[]
  next: string
  outputTail: string | null
}
export interface ConsoleSession {
  session: { expiresAt: string }
}

export interface ConsolePaths {
  '/api/console/session': {
    parameters: NoParams
    get: Op<NoParams, ConsoleSession>
    post: Op<NoParams, ConsoleSession, { operatorKey: string }>
    delete: Op<NoParams, { ok: true }>
  }
  '/api/agents/{id}/check-environment': {
    parameters: IdParam<'id'>
    post: Op<IdParam<'id'>, { environment: EnvironmentCheck }>
  }
  '/api/heartbeat-runs/{runId}/output': {
    parameters: IdParam<'runId'>
    get: Op<{ query?: { after?: string; limit?: number }; header?: never; path: { runId: string }; cookie?: never }, RunOutput>
  }
}

export type ConsoleClient = SlawClient & Client<paths & ConsolePaths>

/** One client for the whole app: no token, the same-origin session cookie authenticates it. */
export function createConsoleClient(baseUrl: string, fetchImpl?: (input: Request) => Promise<Response>): ConsoleClient {
  return createSlawClient({ baseUrl, ...(fetchImpl ? { fetch: fetchImpl } : {}) }) as ConsoleClient
}

/** A refused call, with the API's status and error code (docs/errors.md) kept for the UI. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
    this.name = 'ApiFailure'
  }
}

/** The data of an answer, or an ApiFailure for a refused one (so queries and mutations can throw). */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || result.data === undefined) {
    const body = (result.error ?? {}) as Partial<ApiError>
    throw new ApiFailure(result.response.status, body.code ?? 'unknown', body.error ?? `The server answered ${result.response.status}.`)
  }
  return result.data
}

/** What to tell a person about a failure, in words (never a stack). */
export function describeFailure(err: unknown): string {
  if (err instanceof ApiFailure) {
    if (err.status === 429) return 'Too many attempts. Wait a minute and try again.'
    if (err.status === 401) return 'Your session has ended. Sign in again.'
    return `${err.message} (${err.code})`
  }
  if (err instanceof Error) return `Could not reach the server: ${err.message}`
  return 'Something went wrong.'
}
