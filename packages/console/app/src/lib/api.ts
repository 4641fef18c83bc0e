import { createSlawClient, type ApiError, type operations, type SlawClient } from '@slaw/client'

type Ok<Op extends keyof operations> = operations[Op]['responses'] extends { 200: { content: { 'application/json': infer B } } } ? B : never

/** An adapter's environment check (`POST /api/agents/{id}/check-environment`). */
export type EnvironmentCheck = Ok<'checkAgentEnvironment'> extends { environment: infer E } ? E : never

export type ConsoleClient = SlawClient

/** One client for the whole app: no token, the same-origin session cookie authenticates it. */
export function createConsoleClient(baseUrl: string, fetchImpl?: (input: Request) => Promise<Response>): ConsoleClient {
  return createSlawClient({ baseUrl, ...(fetchImpl ? { fetch: fetchImpl } : {}) })
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
