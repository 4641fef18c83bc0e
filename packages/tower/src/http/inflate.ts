import { Readable } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate, type Gunzip } from 'node:zlib'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { TowerError } from '../errors.js'

type Payload = NodeJS.ReadableStream & { receivedEncodedLength?: number }

/**
 * A preParsing hook that inflates `Content-Encoding: gzip` (also deflate and br) bodies and stops at
 * `maxBytes` of inflated output: a gzip bomb answers 400 invalid_payload after inflating at most
 * that much, and the connection stays usable. Plain bodies pass through untouched (fastify's
 * bodyLimit guards them).
 */
export function inflateBody(maxBytes: number) {
  return async function inflate(request: FastifyRequest, _reply: FastifyReply, payload: Payload): Promise<Payload> {
    const header = request.headers['content-encoding']
    const encoding = (Array.isArray(header) ? header.join(',') : (header ?? '')).trim().toLowerCase()
    if (encoding === '' || encoding === 'identity') return payload
    let inflater: Gunzip | ReturnType<typeof createInflate> | ReturnType<typeof createBrotliDecompress>
    if (encoding === 'gzip' || encoding === 'x-gzip') inflater = createGunzip()
    else if (encoding === 'deflate') inflater = createInflate()
    else if (encoding === 'br') inflater = createBrotliDecompress()
    else throw new TowerError('invalid_payload', `Content-Encoding "${encoding.slice(0, 40)}" is not supported; send gzip or plain JSON.`)

    let encoded = 0
    let inflated = 0
    let failed = false
    const out: Readable & { receivedEncodedLength?: number } = new Readable({ read: () => inflater.resume() })
    const fail = (err: Error) => {
      if (failed) return
      failed = true
      inflater.destroy()
      // Keep reading (and dropping) the rest of the request so the reply can still be sent.
      payload.removeAllListeners('data')
      payload.resume()
      out.destroy(err)
    }
    payload.on('data', (chunk: Buffer) => {
      if (failed) return
      encoded += chunk.length
      out.receivedEncodedLength = encoded
      if (encoded > maxBytes) return fail(new TowerError('invalid_payload', `The body is larger than ${maxBytes} bytes.`))
      inflater.write(chunk)
    })
    payload.on('end', () => {
      if (!failed) inflater.end()
    })
    payload.on('error', (err: Error) => fail(err))
    inflater.on('data', (chunk: Buffer) => {
      inflated += chunk.length
      if (inflated > maxBytes) return fail(new TowerError('invalid_payload', `The inflated body is larger than ${maxBytes} bytes.`))
      if (!out.push(chunk)) inflater.pause()
    })
    inflater.on('end', () => {
      if (!failed) out.push(null)
    })
    inflater.on('error', () => fail(new TowerError('invalid_payload', `The body is not valid ${encoding}.`)))
    return out
  }
}
