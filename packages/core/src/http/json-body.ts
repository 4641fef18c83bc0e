import type { FastifyInstance } from 'fastify'
import { SlawError } from '../errors.js'

/**
 * How deeply JSON containers (objects and arrays) may nest in a request body; the body itself is
 * level 1. Deeper bodies answer 400 `invalid_payload` at parse, before any route runs, so no
 * service, validator or serializer recurses through a hostile document (5,000 levels used to end
 * in a RangeError and a 500). docs/configuration.md.
 */
const maxJsonDepth = 32

/** The nesting depth of a parsed JSON value, without recursion; stops counting past `limit`. */
function jsonDepth(value: unknown, limit = Infinity): number {
  let deepest = 0
  const stack: Array<[unknown, number]> = [[value, 1]]
  while (stack.length) {
    const [v, depth] = stack.pop()!
    if (v === null || typeof v !== 'object') continue
    if (depth > deepest) deepest = depth
    if (deepest > limit) return deepest
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1])
    }
  }
  return deepest
}

/**
 * fastify's own JSON parser (prototype-poisoning protection included) followed by the depth limit,
 * for every route of the app.
 */
export function installJsonBodyParser(app: FastifyInstance, maxDepth = maxJsonDepth): void {
  const parse = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    parse(request, body as string, (err: Error | null, value?: unknown) => {
      if (err) return done(err, undefined)
      if (jsonDepth(value, maxDepth) > maxDepth) {
        const message = `The body is nested deeper than ${maxDepth} levels.`
        return done(new SlawError('invalid_payload', message, [{ path: '/', message: `nested deeper than ${maxDepth} levels` }]), undefined)
      }
      done(null, value)
    })
  })
}
