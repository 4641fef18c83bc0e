import type { FastifyError, FastifyInstance } from 'fastify'
import { TowerError, type ErrorDetail } from '../errors.js'

interface AjvIssue {
  instancePath?: string
  message?: string
  keyword?: string
  params?: { missingProperty?: string; additionalProperty?: string; allowedValues?: unknown[]; tag?: string; tagValue?: unknown }
}

function detailsOf(validation: AjvIssue[], context: string | undefined): ErrorDetail[] {
  return validation.map((v) => {
    let path = v.instancePath ?? ''
    if (v.params?.missingProperty) path += `/${v.params.missingProperty}`
    let message = v.message ?? 'is invalid'
    if (v.params?.allowedValues) message += `: ${v.params.allowedValues.map((x) => JSON.stringify(x)).join(', ')}`
    if (v.keyword === 'discriminator' && v.params?.tag) {
      path += `/${v.params.tag}`
      message = `${JSON.stringify(v.params.tagValue)} is not a known ${v.params.tag}`
    }
    const prefix = context && context !== 'body' ? `/${context}` : ''
    return { path: `${prefix}${path}` || '/', message }
  })
}

/** Body problems fastify or the stream reports before validation: all answer 400 invalid_payload. */
const bodyErrors: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'The request body is too large.',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Send JSON with Content-Type: application/json.',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'The body does not match its Content-Length.',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'The body is empty.',
  FST_ERR_CTP_INVALID_JSON_BODY: 'The body is not valid JSON.',
  Z_DATA_ERROR: 'The body is not valid gzip.',
  Z_BUF_ERROR: 'The gzip body is truncated.',
}

/** PostgreSQL data exceptions (class 22: out-of-range dates, NUL bytes…) come from input: 400, not 500. */
export function isDataException(err: unknown): boolean {
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code)
}

/**
 * Maps every failure onto `{error, code, details?}`. Bad input never answers 500, and a 500 body
 * never carries internals. Nothing from the request (headers, body) is logged.
 */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError & { validation?: AjvIssue[]; validationContext?: string }, request, reply) => {
    let out: TowerError
    if (err instanceof TowerError) out = err
    else if (err.validation) {
      const details = detailsOf(err.validation, err.validationContext)
      out = new TowerError('invalid_payload', `Invalid ${err.validationContext ?? 'request'}: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`, details)
    } else if (typeof err.code === 'string' && bodyErrors[err.code]) out = new TowerError('invalid_payload', bodyErrors[err.code])
    else if (err instanceof SyntaxError) out = new TowerError('invalid_payload', 'The body is not valid JSON.')
    else if (isDataException(err)) out = new TowerError('invalid_payload', 'A value in the request is out of range or not representable.')
    else if (err.statusCode === 429) out = new TowerError('rate_limited')
    else if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      out = err.statusCode === 404 ? new TowerError('not_found') : new TowerError('invalid_payload', 'The request could not be read.')
    } else {
      // Log the failure's kind, never its parameters: they may carry request data.
      request.log.error({ err: { name: err.name, code: err.code, message: err.message, stack: err.stack } }, 'request failed')
      out = new TowerError('internal_error')
    }
    void reply.status(out.statusCode).send(out.toJSON())
  })
  app.setNotFoundHandler((request, reply) => {
    void reply.status(404).send(new TowerError('not_found', `No route ${request.method} ${request.url.split('?')[0]}.`).toJSON())
  })
}
