import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { LockUnavailableError } from '../contracts/lock-provider.js'
import { StorageUnavailableError } from '../contracts/storage.js'
import { SlawError, type ErrorDetail } from '../errors.js'

interface AjvIssue {
  instancePath?: string
  message?: string
  params?: { missingProperty?: string; additionalProperty?: string }
}

function detailsOf(validation: AjvIssue[], context: string | undefined): ErrorDetail[] {
  return validation.map((v) => {
    let path = v.instancePath ?? ''
    if (v.params?.missingProperty) path += `/${v.params.missingProperty}`
    if (v.params?.additionalProperty) path += `/${v.params.additionalProperty}`
    const prefix = context && context !== 'body' ? `/${context}` : ''
    const message = v.params?.additionalProperty ? 'is not a known field' : (v.message ?? 'is invalid')
    return { path: `${prefix}${path}` || '/', message }
  })
}

/**
 * Fastify's `frameworkErrors`: failures the router meets before any route runs. A path segment that
 * is not valid percent-encoding, or longer than any id, names no resource: 404 with the error body.
 */
export function frameworkErrors(err: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const out = err.code === 'FST_ERR_BAD_URL' || err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? new SlawError('not_found') : new SlawError('internal_error')
  void reply.status(out.statusCode).send(out.toJSON())
}

/**
 * Fastify's `clientErrorHandler`: requests Node's HTTP parser rejects before fastify sees them (a
 * header section over the size limit, a malformed request line or header, a request that timed
 * out) get the same `{error, code}` body as every other error, then the connection closes.
 */
export function clientErrorHandler(this: FastifyInstance, err: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const out =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new SlawError('request_timeout')
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? new SlawError('header_too_large')
        : new SlawError('invalid_payload', 'The request is not valid HTTP.')
  this.log.debug({ code: err.code }, 'client error')
  if (socket.writable) {
    const body = JSON.stringify(out.toJSON())
    socket.write(
      `HTTP/1.1 ${out.statusCode} ${STATUS_CODES[out.statusCode]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    )
  }
  socket.destroy()
}

/** Bounds of an error body: a huge bad request must not make a huge answer (or log line). */
const errorBodyLimits = { details: 20, pathChars: 200, messageChars: 300, errorChars: 1000 }

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (truncated)`
}

/**
 * At most `details` entries, each path and message clipped, and the sentence clipped (validation
 * messages repeat the details). When entries were dropped, a last entry says how many.
 */
function capErrorBody<B extends { error: string; details?: ErrorDetail[] }>(body: B): B {
  const { details, error } = body
  const capped: B = { ...body, error: clip(error, errorBodyLimits.errorChars) }
  if (details) {
    const kept = details.slice(0, errorBodyLimits.details).map((d) => ({ path: clip(d.path, errorBodyLimits.pathChars), message: clip(d.message, errorBodyLimits.messageChars) }))
    if (details.length > kept.length) kept.push({ path: '/', message: `details truncated: ${details.length - kept.length} more not shown` })
    capped.details = kept
  }
  return capped
}

/** Maps every failure onto the error body of docs/errors.md. 5xx bodies never carry internals. */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError & { validation?: AjvIssue[]; validationContext?: string }, request, reply) => {
    let out: SlawError
    if (err instanceof SlawError) out = err
    else if (err.validation && err.validationContext === 'params') {
      // Path segments name resources: a malformed one names nothing (docs/errors.md: 404, never 400/500).
      out = new SlawError('not_found')
    } else if (err.validation) {
      const details = detailsOf(err.validation, err.validationContext)
      out = new SlawError('invalid_payload', `Invalid ${err.validationContext ?? 'request'}: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`, details)
    } else if (err instanceof LockUnavailableError) out = new SlawError('lock_unavailable')
    else if (err instanceof StorageUnavailableError) out = new SlawError('database_unavailable')
    else if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') out = new SlawError('payload_too_large')
    else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') out = new SlawError('unsupported_media_type')
    else if (err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || err instanceof SyntaxError) {
      out = new SlawError('invalid_payload', 'The body is not valid JSON.', [{ path: '/', message: 'malformed JSON' }])
    } else if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      out = err.statusCode === 429 ? new SlawError('rate_limited') : new SlawError(err.statusCode === 404 ? 'not_found' : 'invalid_payload', err.message)
    } else {
      request.log.error({ err }, 'unhandled error')
      out = new SlawError('internal_error')
    }
    if (out.statusCode >= 500 && !(err instanceof SlawError)) request.log.warn({ code: out.code, err }, 'request failed')
    const retryAfter = (out as { retryAfterSec?: unknown }).retryAfterSec
    if (typeof retryAfter === 'number') void reply.header('retry-after', String(retryAfter))
    void reply.status(out.statusCode).send(capErrorBody(out.toJSON()))
  })
  app.setNotFoundHandler((request, reply) => {
    void reply.status(404).send(capErrorBody(new SlawError('not_found', `No route ${request.method} ${request.url.split('?')[0]}.`).toJSON()))
  })
}
