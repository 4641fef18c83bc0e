import type { FastifyRequest } from 'fastify'
import { MIN_PROTOCOL_VERSION, PROTOCOL_VERSION } from '@slaw/core/ingest'
import { TowerError } from '../errors.js'

/**
 * Checks `protocolVersion` before the body is validated, so an instance speaking another version
 * learns that, not which field its body lacks. The tower accepts the current version and the one
 * before it. Older answers 426 (the instance must upgrade); newer answers 426 too (this tower must
 * upgrade): a 400 would tell the instance its data is bad, and it might drop a batch that is fine.
 * A missing or non-integer version is left to validation (400 invalid_payload).
 */
export async function checkProtocolVersion(request: FastifyRequest): Promise<void> {
  const body = request.body
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return
  const version = (body as { protocolVersion?: unknown }).protocolVersion
  if (typeof version !== 'number' || !Number.isInteger(version)) return
  if (version < MIN_PROTOCOL_VERSION) {
    throw new TowerError(
      'protocol_version_unsupported',
      `Ingest protocol version ${version} is no longer supported: this tower accepts versions ${MIN_PROTOCOL_VERSION} to ${PROTOCOL_VERSION}. Upgrade slaw on this instance.`,
    )
  }
  if (version > PROTOCOL_VERSION) {
    throw new TowerError(
      'protocol_version_unsupported',
      `Ingest protocol version ${version} is newer than this tower understands (it accepts ${MIN_PROTOCOL_VERSION} to ${PROTOCOL_VERSION}). ` +
        `Upgrade the tower, or run the instance with protocol ${PROTOCOL_VERSION}.`,
    )
  }
}
