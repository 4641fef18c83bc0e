import { createHash, createHmac, randomBytes, randomUUID, type Hash, type Hmac } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { readBody, sendJson, startStandIn } from '@slaw/core/testing'
import { SignatureV4 } from '@smithy/signature-v4'

/**
 * A local AWS Secrets Manager speaking its JSON 1.1 protocol: `POST /` with
 * `X-Amz-Target: secretsmanager.<Operation>` and `Content-Type: application/x-amz-json-1.1`, SigV4
 * `Authorization` headers (the access key id, scope and signature are verified), errors as
 * `{"__type": "<Exception>", "message": "…"}`. Operations: CreateSecret, PutSecretValue,
 * GetSecretValue, DeleteSecret, ListSecrets. Real HTTP on 127.0.0.1.
 */
export interface SecretsManagerStandIn {
  endpoint: string
  /** `ok`, `hang` (never answer) or `forbid` (403 AccessDeniedException to everything). */
  mode: 'ok' | 'hang' | 'forbid'
  /** Every call seen: operation and the access key id that signed it. */
  calls: Array<{ target: string; accessKeyId?: string; body: Record<string, unknown> }>
  close(): Promise<void>
  /** Resolves once every request left hanging has been given up by its client (its socket closed). */
  hangingClosed(): Promise<void>
}

interface Version {
  id: string
  value?: string
  stages: string[]
  created: number
}
interface Secret {
  arn: string
  name: string
  kmsKeyId?: string
  tags: Array<{ Key: string; Value: string }>
  versions: Version[]
  deletedAt?: number
  created: number
}

class AwsError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message)
  }
}

export async function startSecretsManagerStandIn(options: { accessKeyId: string; secretAccessKey: string; region?: string }): Promise<SecretsManagerStandIn> {
  const region = options.region ?? 'us-east-1'
  const secrets: Secret[] = []
  const calls: SecretsManagerStandIn['calls'] = []
  let clock = 1_767_225_600 // 2026-01-01, in epoch seconds as the protocol carries them
  const tick = () => (clock += 1)

  const find = (id: unknown): Secret => {
    const secret = secrets.find((s) => s.arn === id || s.name === id)
    if (!secret) throw new AwsError('ResourceNotFoundException', "Secrets Manager can't find the specified secret.")
    return secret
  }
  const live = (id: unknown): Secret => {
    const secret = find(id)
    if (secret.deletedAt) throw new AwsError('InvalidRequestException', "You can't perform this operation on the secret because it was marked for deletion.")
    return secret
  }
  const addVersion = (secret: Secret, value: string | undefined): Version => {
    for (const v of secret.versions) {
      v.stages = v.stages.filter((s) => s !== 'AWSPREVIOUS')
      if (v.stages.includes('AWSCURRENT')) v.stages = [...v.stages.filter((s) => s !== 'AWSCURRENT'), 'AWSPREVIOUS']
    }
    const version: Version = { id: randomUUID(), value, stages: ['AWSCURRENT'], created: tick() }
    secret.versions.push(version)
    return version
  }
  const stringValue = (body: Record<string, unknown>): string => {
    if (typeof body.SecretString !== 'string') throw new AwsError('InvalidParameterException', 'You must provide either SecretString or SecretBinary.')
    if (Buffer.byteLength(body.SecretString) > 65_536) throw new AwsError('InvalidParameterException', 'SecretString must be at most 65536 bytes.')
    return body.SecretString
  }

  const operations: Record<string, (body: Record<string, unknown>) => unknown> = {
    CreateSecret(body) {
      const name = body.Name
      if (typeof name !== 'string' || !/^[A-Za-z0-9/_+=.@-]{1,512}$/.test(name))
        throw new AwsError('ValidationException', 'Invalid name. Must be a valid name containing alphanumeric characters, or any of the following: -/_+=.@!')
      const existing = secrets.find((s) => s.name === name)
      if (existing?.deletedAt) throw new AwsError('InvalidRequestException', "You can't create this secret because a secret with this name is already scheduled for deletion.")
      if (existing) throw new AwsError('ResourceExistsException', `The operation failed because the secret ${name} already exists.`)
      const value = stringValue(body)
      const secret: Secret = {
        arn: `arn:aws:secretsmanager:${region}:123456789012:secret:${name}-${randomBytes(3).toString('hex')}`,
        name,
        tags: (body.Tags as Secret['tags'] | undefined) ?? [],
        versions: [],
        created: tick(),
        ...(typeof body.KmsKeyId === 'string' ? { kmsKeyId: body.KmsKeyId } : {}),
      }
      secrets.push(secret)
      const version = addVersion(secret, value)
      return { ARN: secret.arn, Name: secret.name, VersionId: version.id }
    },
    PutSecretValue(body) {
      const secret = live(body.SecretId)
      const version = addVersion(secret, stringValue(body))
      return { ARN: secret.arn, Name: secret.name, VersionId: version.id, VersionStages: version.stages }
    },
    GetSecretValue(body) {
      const secret = live(body.SecretId)
      const version = body.VersionId ? secret.versions.find((v) => v.id === body.VersionId) : secret.versions.find((v) => v.stages.includes((body.VersionStage as string | undefined) ?? 'AWSCURRENT'))
      if (!version)
        throw new AwsError(
          'ResourceNotFoundException',
          `Secrets Manager can't find the specified secret value for ${body.VersionId ? `VersionId: ${String(body.VersionId)}` : `staging label: ${String(body.VersionStage ?? 'AWSCURRENT')}`}`,
        )
      return { ARN: secret.arn, Name: secret.name, VersionId: version.id, SecretString: version.value, VersionStages: version.stages, CreatedDate: version.created }
    },
    DeleteSecret(body) {
      const secret = live(body.SecretId)
      if (body.ForceDeleteWithoutRecovery && body.RecoveryWindowInDays !== undefined) {
        throw new AwsError('InvalidParameterException', "You can't use ForceDeleteWithoutRecovery in conjunction with RecoveryWindowInDays.")
      }
      const window = body.ForceDeleteWithoutRecovery ? 0 : Number(body.RecoveryWindowInDays ?? 30)
      if (window !== 0 && (window < 7 || window > 30)) throw new AwsError('InvalidParameterException', 'The RecoveryWindowInDays value must be between 7 and 30 days (inclusive).')
      secret.deletedAt = tick()
      if (window === 0) secrets.splice(secrets.indexOf(secret), 1)
      return { ARN: secret.arn, Name: secret.name, DeletionDate: secret.deletedAt + window * 86_400 }
    },
    ListSecrets(body) {
      const max = Number(body.MaxResults ?? 100)
      if (!Number.isInteger(max) || max < 1 || max > 100) throw new AwsError('InvalidParameterException', 'MaxResults must be from 1 to 100.')
      const filters = (body.Filters as Array<{ Key: string; Values: string[] }> | undefined) ?? []
      // name: prefix match, case-sensitive; the values of one filter are ORed, filters are ANDed; `!` negates.
      const matches = (s: Secret) =>
        filters.every((f) => {
          if (f.Key !== 'name') throw new AwsError('InvalidParameterException', `This stand-in filters by name only, not ${f.Key}.`)
          return f.Values.some((v) => (v.startsWith('!') ? !s.name.startsWith(v.slice(1)) : s.name.startsWith(v)))
        })
      const listed = secrets.filter((s) => (body.IncludePlannedDeletion || !s.deletedAt) && matches(s)).sort((a, b) => a.created - b.created)
      if (body.SortOrder === 'desc') listed.reverse()
      const start = body.NextToken === undefined ? 0 : Number(Buffer.from(String(body.NextToken), 'base64').toString('utf8'))
      if (!Number.isInteger(start) || start < 0) throw new AwsError('InvalidNextTokenException', 'The NextToken value is invalid.')
      const page = listed.slice(start, start + max)
      const next = start + max < listed.length ? Buffer.from(String(start + max)).toString('base64') : undefined
      return {
        SecretList: page.map((s) => ({ ARN: s.arn, Name: s.name, Tags: s.tags, CreatedDate: s.created, ...(s.kmsKeyId ? { KmsKeyId: s.kmsKeyId } : {}) })),
        ...(next ? { NextToken: next } : {}),
      }
    },
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const text = await readBody(req)
    if (standIn.mode === 'hang') return server.hold(req)
    const target = String(req.headers['x-amz-target'] ?? '')
    const credential = /Credential=([^/]+)\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request/.exec(String(req.headers.authorization ?? ''))
    let body: Record<string, unknown> = {}
    try {
      body = text ? (JSON.parse(text) as Record<string, unknown>) : {}
    } catch {
      return reply(res, 400, { __type: 'SerializationException', message: 'Malformed JSON.' })
    }
    calls.push({ target, body, ...(credential ? { accessKeyId: credential[1] } : {}) })
    if (req.method !== 'POST' || !String(req.headers['content-type'] ?? '').startsWith('application/x-amz-json-1.1')) {
      return reply(res, 400, { __type: 'SerializationException', message: 'Expected POST with application/x-amz-json-1.1.' })
    }
    if (!credential) return reply(res, 400, { __type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' })
    if (credential[1] !== options.accessKeyId || credential[3] !== 'secretsmanager') {
      return reply(res, 400, { __type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' })
    }
    if (!(await signatureMatches(req, text, credential[2]!, options))) {
      return reply(res, 400, {
        __type: 'InvalidSignatureException',
        message: 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
      })
    }
    const [service, operation] = target.split('.')
    const op = service === 'secretsmanager' && operation ? operations[operation] : undefined
    if (!op) return reply(res, 400, { __type: 'UnknownOperationException', message: `Unknown operation ${target}` })
    if (standIn.mode === 'forbid') {
      return reply(res, 403, {
        __type: 'AccessDeniedException',
        Message: `User: arn:aws:iam::123456789012:user/slaw is not authorized to perform: secretsmanager:${operation} because no identity-based policy allows the secretsmanager:${operation} action`,
      })
    }
    try {
      reply(res, 200, op(body))
    } catch (error) {
      if (error instanceof AwsError) return reply(res, error.status, { __type: error.type, message: error.message })
      throw error
    }
  }

  const server = await startStandIn(handle, { onError: (res, error) => reply(res, 500, { __type: 'InternalServiceError', message: String(error) }) })
  const standIn: SecretsManagerStandIn = {
    endpoint: server.url,
    mode: 'ok',
    calls,
    hangingClosed: server.hangingClosed,
    close: server.close,
  }
  return standIn
}

/** SHA-256 and HMAC-SHA-256 from node:crypto, in the shape the SigV4 signer takes. */
class NodeSha256 {
  readonly #hash: Hash | Hmac
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.#hash = secret === undefined ? createHash('sha256') : createHmac('sha256', toBuffer(secret))
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.#hash.update(toBuffer(data))
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest())
  }
}
function toBuffer(data: string | ArrayBuffer | ArrayBufferView): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8')
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength)
  return Buffer.from(data)
}

/** Signs the request again with the expected credentials, over the headers it says it signed, and compares. */
async function signatureMatches(req: IncomingMessage, body: string, region: string, keys: { accessKeyId: string; secretAccessKey: string }): Promise<boolean> {
  const authorization = String(req.headers.authorization ?? '')
  const signedHeaders = /SignedHeaders=([^,\s]+)/.exec(authorization)?.[1]?.split(';') ?? []
  const amzDate = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(String(req.headers['x-amz-date'] ?? ''))
  if (!signedHeaders.includes('host') || !amzDate) return false
  const [, y, mo, d, h, mi, se] = amzDate
  const url = new URL(req.url ?? '/', `http://${req.headers.host}`)
  const signer = new SignatureV4({ credentials: keys, region, service: 'secretsmanager', sha256: NodeSha256, uriEscapePath: true })
  const signed = await signer.sign(
    {
      method: req.method ?? 'POST',
      protocol: 'http:',
      hostname: url.hostname,
      port: Number(url.port),
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: Object.fromEntries(signedHeaders.map((name) => [name, String(req.headers[name] ?? '')])),
      body,
    },
    { signingDate: new Date(Date.UTC(+y!, +mo! - 1, +d!, +h!, +mi!, +se!)) },
  )
  return signed.headers.authorization === authorization
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  const headers: Record<string, string> = { 'Content-Type': 'application/x-amz-json-1.1', 'x-amzn-RequestId': randomUUID() }
  const type = (body as { __type?: string }).__type
  if (status >= 400 && type) headers['x-amzn-ErrorType'] = `${type}:`
  sendJson(res, status, body, headers)
}
