import { promisify } from 'node:util'
import { gzip as gzipCb } from 'node:zlib'
import { INGEST_BASE_PATH } from '@slaw/core/ingest'
import { parseRetryAfter } from './backoff.js'

const gzip = promisify(gzipCb)

/**
 * A failed ingest call. `status` 0 means the tower was not reached (network error or timeout).
 * `retryable` covers 429, 5xx and network errors: back off and try again, keep everything.
 */
export class IngestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message)
    this.name = 'IngestError'
  }

  get retryable(): boolean {
    return this.status === 0 || this.status === 429 || this.status >= 500
  }
}

/** Raised when an Operator action or close() cut a call short; nothing is recorded for it. */
export class AbortedError extends Error {
  constructor() {
    super('aborted')
    this.name = 'AbortedError'
  }
}

export interface CallOptions {
  apiKey?: string | null | undefined
  headers?: Record<string, string>
  signal?: AbortSignal | undefined
}

/**
 * The ingest HTTP calls: JSON bodies gzip-compressed (`Content-Encoding: gzip`), errors mapped to
 * IngestError by their `{error, code}` body. Node's own fetch; the API key goes in the
 * Authorization header only and never into an error message or a log line.
 */
export class IngestHttp {
  constructor(
    private readonly baseUrl: string,
    private readonly timeoutMs: number,
  ) {}

  url(path: string): string {
    return `${this.baseUrl.replace(/\/+$/, '')}${INGEST_BASE_PATH}${path}`
  }

  async post<T>(path: string, body: unknown, options: CallOptions = {}): Promise<{ status: number; body: T }> {
    const raw = Buffer.from(JSON.stringify(body))
    const compressed = await gzip(raw)
    const headers = { 'content-type': 'application/json', 'content-encoding': 'gzip', ...options.headers }
    return this.request<T>('POST', path, compressed, { ...options, headers })
  }

  async get<T>(path: string, options: CallOptions = {}): Promise<{ status: number; body: T }> {
    return this.request<T>('GET', path, undefined, options)
  }

  /** Why a call did not reach the tower, in words (never the request itself). */
  private whyUnreached(err: unknown): string {
    if (!(err instanceof Error)) return String(err)
    if (err.name === 'TimeoutError') return `timed out after ${this.timeoutMs} ms`
    return (err.cause as Error | undefined)?.message ?? err.message
  }

  private async request<T>(method: string, path: string, body: Buffer | undefined, options: CallOptions): Promise<{ status: number; body: T }> {
    const signals = [AbortSignal.timeout(this.timeoutMs), ...(options.signal ? [options.signal] : [])]
    let res: Response
    try {
      res = await fetch(this.url(path), {
        method,
        headers: { accept: 'application/json', ...options.headers, ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
        ...(body ? { body } : {}),
        signal: AbortSignal.any(signals),
      })
    } catch (err) {
      if (options.signal?.aborted) throw new AbortedError()
      throw new IngestError(0, 'network_error', `${method} ${path}: ${this.whyUnreached(err)}`)
    }
    let text: string
    try {
      text = await res.text()
    } catch (err) {
      if (options.signal?.aborted) throw new AbortedError()
      throw new IngestError(0, 'network_error', `${method} ${path}: the response was cut short (${err instanceof Error ? err.message : String(err)})`)
    }
    let parsed: unknown
    try {
      parsed = text ? JSON.parse(text) : undefined
    } catch {
      parsed = undefined
    }
    if (res.status >= 200 && res.status < 300) {
      if (parsed === undefined || parsed === null || typeof parsed !== 'object') {
        throw new IngestError(502, 'invalid_response', `${method} ${path}: the tower answered ${res.status} without a JSON body`)
      }
      return { status: res.status, body: parsed as T }
    }
    const err = (parsed && typeof parsed === 'object' ? parsed : {}) as { code?: unknown; error?: unknown }
    const code = typeof err.code === 'string' ? err.code : `http_${res.status}`
    const message = typeof err.error === 'string' ? err.error : `the tower answered ${res.status}`
    throw new IngestError(res.status, code, `${method} ${path}: ${message}`, parseRetryAfter(res.headers.get('retry-after')))
  }
}
