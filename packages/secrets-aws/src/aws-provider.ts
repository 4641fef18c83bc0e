import type { SecretsManagerClient, SecretsManagerClientConfig } from '@aws-sdk/client-secrets-manager'
import type { SecretProvider } from '@slaw/core/secret-provider'
import { SecretProviderError, endpointAllowed, endpointOrigin, parseEndpointAllowList, providerConfigError, readProviderConfig } from '@slaw/core/secret-provider'
import { formatRef, parseRef } from './refs.js'

export interface AwsSecretsManagerProviderOptions {
  /**
   * Extra settings for every `SecretsManagerClient` the provider creates (e.g. `credentials` for a
   * custom chain, a proxy's `requestHandler`). Default: the SDK's own defaults, credentials from its
   * default provider chain (environment, shared config and SSO, web identity, ECS and EC2 roles).
   */
  clientConfig?: Partial<SecretsManagerClientConfig>
  /** How long one call may take, retries included, in ms, unless a config sets `timeoutMs`. Default 10,000. */
  timeoutMs?: number
  /**
   * Endpoints a config's `endpoint` may name, besides AWS's own (`https://*.amazonaws.com`) and the
   * node's `AWS_ENDPOINT_URL_SECRETS_MANAGER` / `AWS_ENDPOINT_URL`: origins, bare hosts (any port)
   * or `*.example.com`. Default: `SVC_AWS_ALLOWED_ENDPOINTS` (comma- or space-separated).
   */
  allowedEndpoints?: readonly string[]
}

/** Config keys an `aws_secrets_manager` provider configuration may hold (credentials never: the SDK chain supplies them). */
export const awsConfigKeys = ['region', 'endpoint', 'prefix', 'kmsKeyId', 'recoveryWindowInDays', 'timeoutMs', 'maxAttempts'] as const

interface AwsConfig {
  region?: string
  endpoint?: string
  prefix: string
  kmsKeyId?: string
  /** 0: delete at once, without recovery. */
  recoveryWindowInDays: number
  timeoutMs: number
  maxAttempts?: number
}

/**
 * A `SecretProvider` on AWS Secrets Manager, through `@aws-sdk/client-secrets-manager`.
 *
 * - `store` puts the value as a new version of the secret `<prefix><secretId>` (created, with the
 *   configured KMS key, on its first store) and answers the ref `<ARN>?versionId=<VersionId>`.
 * - `resolve` reads that version; a ref without `versionId` (an imported ARN or name) reads AWSCURRENT.
 * - `delete` deletes the whole secret, all versions (Secrets Manager cannot delete one version),
 *   after `recoveryWindowInDays` (0: at once).
 * - `listRemote` is ListSecrets with a name filter and NextToken.
 */
export function awsSecretsManagerProvider(options: AwsSecretsManagerProviderOptions = {}): SecretProvider {
  const defaultTimeoutMs = options.timeoutMs ?? 10_000
  const clients = new Map<string, SecretsManagerClient>()

  // A signed request (replayable for minutes) goes only where the node allows: AWS's own endpoints
  // over https, the node's AWS_ENDPOINT_URL*, its allowlist; never an endpoint only a config names.
  const endpointProblem = (endpoint: string): string | undefined => {
    const env = process.env
    const allowed = [
      ...[env.AWS_ENDPOINT_URL_SECRETS_MANAGER, env.AWS_ENDPOINT_URL].filter((e): e is string => Boolean(e)).map(endpointOrigin),
      ...(options.allowedEndpoints ?? parseEndpointAllowList(env.SVC_AWS_ALLOWED_ENDPOINTS)),
    ]
    let awsOwned = false
    try {
      const url = new URL(endpoint)
      awsOwned = url.protocol === 'https:' && /\.amazonaws\.com(\.cn)?$/i.test(url.hostname)
    } catch {
      return `endpoint must be an http(s) URL (got ${endpoint})`
    }
    if (awsOwned || endpointAllowed(endpoint, allowed)) return undefined
    return `endpoint ${endpointOrigin(endpoint)} is not one this node sends signed requests to (AWS's own, AWS_ENDPOINT_URL, or an entry of SVC_AWS_ALLOWED_ENDPOINTS on every node)`
  }

  const parseConfig = (raw: Record<string, unknown>): AwsConfig => {
    const config = readProviderConfig('aws_secrets_manager', awsConfigKeys, raw)
    const endpoint = config.nonEmptyString('endpoint')
    if (endpoint && !/^https?:\/\/[^/]+/.test(endpoint)) throw invalid(`config endpoint must be an http(s) URL (got ${endpoint})`)
    const refused = endpoint ? endpointProblem(endpoint) : undefined
    if (refused) throw invalid(`config ${refused}`)
    const prefix = raw.prefix === undefined ? 'slaw/' : raw.prefix
    if (typeof prefix !== 'string' || !/^[A-Za-z0-9/_+=.@-]*$/.test(prefix)) throw invalid('config prefix may hold only letters, digits and /_+=.@-')
    const recoveryWindowInDays = config.integer('recoveryWindowInDays', 0, 30) ?? 30
    if (recoveryWindowInDays > 0 && recoveryWindowInDays < 7) throw invalid('config recoveryWindowInDays must be 0 (delete at once) or 7 to 30')
    const cfg: AwsConfig = { prefix, recoveryWindowInDays, timeoutMs: config.integer('timeoutMs', 1, 300_000) ?? defaultTimeoutMs }
    const region = config.nonEmptyString('region')
    if (region) cfg.region = region
    if (endpoint) cfg.endpoint = endpoint
    const kmsKeyId = config.nonEmptyString('kmsKeyId')
    if (kmsKeyId) cfg.kmsKeyId = kmsKeyId
    const maxAttempts = config.integer('maxAttempts', 1, 10)
    if (maxAttempts) cfg.maxAttempts = maxAttempts
    return cfg
  }

  const client = (sdk: Sdk, cfg: AwsConfig): SecretsManagerClient => {
    const key = JSON.stringify([cfg.region, cfg.endpoint, cfg.maxAttempts, cfg.timeoutMs])
    let found = clients.get(key)
    if (!found) {
      found = new sdk.SecretsManagerClient({
        ...options.clientConfig,
        ...(cfg.region ? { region: cfg.region } : {}),
        ...(cfg.endpoint ? { endpoint: cfg.endpoint } : {}),
        ...(cfg.maxAttempts ? { maxAttempts: cfg.maxAttempts } : {}),
        requestHandler: options.clientConfig?.requestHandler ?? { requestTimeout: cfg.timeoutMs, connectionTimeout: cfg.timeoutMs },
      })
      clients.set(key, found)
    }
    return found
  }

  /** Sends one command, bounded by the config's timeout (retries included); maps every failure. */
  const send = async <T>(cfg: AwsConfig, what: string, run: (c: SecretsManagerClient, sdk: Sdk, abortSignal: AbortSignal) => Promise<T>): Promise<T> => {
    const signal = AbortSignal.timeout(cfg.timeoutMs)
    try {
      const sdk = await loadSdk()
      return await run(client(sdk, cfg), sdk, signal)
    } catch (error) {
      throw mapError(error, what, cfg, signal.aborted)
    }
  }

  return {
    type: 'aws_secrets_manager',
    configKeys: awsConfigKeys,

    async store({ secretId, version, value, config }) {
      const cfg = parseConfig(config)
      const name = `${cfg.prefix}${secretId}`
      const put = () => send(cfg, `put a value of ${name}`, (c, sdk, abortSignal) => c.send(new sdk.PutSecretValueCommand({ SecretId: name, SecretString: value }), { abortSignal }))
      const create = () =>
        send(cfg, `create ${name}`, (c, sdk, abortSignal) =>
          c.send(
            new sdk.CreateSecretCommand({
              Name: name,
              SecretString: value,
              ...(cfg.kmsKeyId ? { KmsKeyId: cfg.kmsKeyId } : {}),
              Description: 'Stored by slaw',
              Tags: [{ Key: 'slaw:secretId', Value: secretId }],
            }),
            { abortSignal },
          ),
        )
      const isExists = (e: unknown) => e instanceof AwsSecretProviderError && e.awsName === 'ResourceExistsException'
      const isMissing = (e: unknown) => e instanceof SecretProviderError && e.code === 'not_found'
      // The first version usually creates the secret, a later one puts a new version; either way a
      // concurrent store that got there first (or a secret created outside slaw) is taken in stride.
      const storeOnce = async (): Promise<{ ARN?: string; VersionId?: string }> => {
        if (version <= 1) return create().catch((e: unknown) => (isExists(e) ? put() : Promise.reject(e)))
        return put().catch((e: unknown) => (isMissing(e) ? create().catch((again: unknown) => (isExists(again) ? put() : Promise.reject(again))) : Promise.reject(e)))
      }
      let answer: { ARN?: string; VersionId?: string }
      try {
        answer = await storeOnce()
      } catch (error) {
        throw scrub(error, value)
      }
      if (!answer.ARN || !answer.VersionId) throw new SecretProviderError('unavailable', `aws_secrets_manager store ${name}: the answer named no ARN or VersionId`)
      return { ref: formatRef({ secretId: answer.ARN, versionId: answer.VersionId }) }
    },

    async resolve({ ref, config }) {
      const cfg = parseConfig(config)
      const parsed = parseRef(ref)
      const what = `read ${formatRef({ ...parsed, jsonKey: undefined })}`
      const answer = await send(cfg, what, (c, sdk, abortSignal) =>
        c.send(
          new sdk.GetSecretValueCommand({
            SecretId: parsed.secretId,
            ...(parsed.versionId ? { VersionId: parsed.versionId } : {}),
            ...(parsed.versionStage ? { VersionStage: parsed.versionStage } : {}),
          }),
          { abortSignal },
        ),
      )
      const text = answer.SecretString ?? (answer.SecretBinary ? Buffer.from(answer.SecretBinary).toString('utf8') : undefined)
      if (text === undefined) throw new SecretProviderError('not_found', `aws_secrets_manager ${what}: the version holds no value`)
      if (parsed.jsonKey === undefined) return text
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch {
        throw new SecretProviderError('not_found', `aws_secrets_manager ${what}: the value is not JSON, so it has no key ${parsed.jsonKey}`)
      }
      const field = json && typeof json === 'object' ? (json as Record<string, unknown>)[parsed.jsonKey] : undefined
      if (field === undefined) throw new SecretProviderError('not_found', `aws_secrets_manager ${what}: the JSON value has no key ${parsed.jsonKey}`)
      return typeof field === 'string' ? field : JSON.stringify(field)
    },

    async delete({ ref, config }) {
      const cfg = parseConfig(config)
      const { secretId } = parseRef(ref)
      try {
        await send(cfg, `delete ${secretId}`, (c, sdk, abortSignal) =>
          c.send(
            new sdk.DeleteSecretCommand({
              SecretId: secretId,
              ...(cfg.recoveryWindowInDays === 0 ? { ForceDeleteWithoutRecovery: true } : { RecoveryWindowInDays: cfg.recoveryWindowInDays }),
            }),
            { abortSignal },
          ),
        )
      } catch (error) {
        // Already gone, or already scheduled for deletion: delete is idempotent.
        if (error instanceof SecretProviderError && error.code === 'not_found') return
        throw error
      }
    },

    validateConfig(config) {
      const endpoint = config.endpoint
      if (typeof endpoint !== 'string' || !/^https?:\/\/[^/]+/.test(endpoint)) return []
      const refused = endpointProblem(endpoint)
      return refused ? [{ path: '/endpoint', message: refused }] : []
    },

    async health(config) {
      try {
        const cfg = parseConfig(config)
        await send(cfg, 'list secrets', (c, sdk, abortSignal) => c.send(new sdk.ListSecretsCommand({ MaxResults: 1 }), { abortSignal }))
        return { ok: true }
      } catch (error) {
        return { ok: false, message: error instanceof SecretProviderError ? error.message : 'aws_secrets_manager health check failed' }
      }
    },

    async listRemote({ config, query, pageSize, nextToken }) {
      const cfg = parseConfig(config)
      // A name holds only these characters: a query with any other (or a leading `!`, AWS's negation) matches nothing.
      if (query && !/^[A-Za-z0-9/_+=.@-]+$/.test(query)) return { items: [] }
      // AWS's name filter matches the start of a name (case-sensitive); also match under slaw's prefix.
      const values = query ? [...new Set([query, `${cfg.prefix}${query}`])] : []
      const answer = await send(cfg, 'list secrets', (c, sdk, abortSignal) =>
        c.send(
          new sdk.ListSecretsCommand({
            MaxResults: pageSize,
            ...(nextToken ? { NextToken: nextToken } : {}),
            ...(values.length ? { Filters: [{ Key: 'name', Values: values }] } : {}),
            SortOrder: 'asc',
          }),
          { abortSignal },
        ),
      )
      const items = (answer.SecretList ?? []).filter((s): s is typeof s & { ARN: string; Name: string } => Boolean(s.ARN && s.Name)).map((s) => ({ externalRef: s.ARN, name: s.Name }))
      return answer.NextToken ? { items, nextToken: answer.NextToken } : { items }
    },

    async close() {
      for (const c of clients.values()) c.destroy()
      clients.clear()
    },
  }
}

type Sdk = typeof import('@aws-sdk/client-secrets-manager')
let sdkPromise: Promise<Sdk> | undefined
/** The SDK, loaded on first use: registering the provider (at every `slaw start`) costs nothing until a configuration uses it. */
function loadSdk(): Promise<Sdk> {
  sdkPromise ??= import('@aws-sdk/client-secrets-manager')
  return sdkPromise
}

/** A provider error that remembers the AWS exception name, for the retry decisions in `store`. */
class AwsSecretProviderError extends SecretProviderError {
  constructor(
    code: ConstructorParameters<typeof SecretProviderError>[0],
    message: string,
    readonly awsName: string,
  ) {
    super(code, message)
  }
}
/** Belt and braces: an error about a write never repeats what was written. */
function scrub(error: unknown, value: string): unknown {
  if (!(error instanceof SecretProviderError) || !value || !error.message.includes(value)) return error
  return new SecretProviderError(error.code, error.message.split(value).join('[value]'))
}

function invalid(message: string): SecretProviderError {
  return providerConfigError('aws_secrets_manager', message)
}

const notFound = new Set(['ResourceNotFoundException'])
const denied = new Set([
  'AccessDeniedException',
  'AccessDenied',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'ExpiredTokenException',
  'IncompleteSignature',
  'MissingAuthenticationToken',
  'DecryptionFailure',
  'InvalidClientTokenId',
  'NotAuthorized',
])
const badInput = new Set(['InvalidParameterException', 'ValidationException', 'MalformedPolicyDocumentException', 'LimitExceededException', 'EncryptionFailure'])
const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE'])

/**
 * An SDK failure as a SecretProviderError. The message is built from the exception's name and
 * AWS's own message (which never echoes a secret value); the SDK error is not kept as the cause,
 * so no request travels with the error.
 */
function mapError(error: unknown, what: string, cfg: AwsConfig, timedOut: boolean): SecretProviderError {
  if (error instanceof SecretProviderError) return error
  const e = (error ?? {}) as { name?: string; message?: string; code?: string; $metadata?: { httpStatusCode?: number }; cause?: { code?: string } }
  const name = e.name ?? 'Error'
  const status = e.$metadata?.httpStatusCode
  const said = e.message ? `: ${e.message.slice(0, 300)}` : ''
  const where = cfg.endpoint ?? `Secrets Manager${cfg.region ? ` in ${cfg.region}` : ''}`
  const prefix = `aws_secrets_manager ${what}`
  if (timedOut || name === 'AbortError' || name === 'TimeoutError' || e.code === 'ETIMEDOUT' || e.code === 'TimeoutError') {
    return new AwsSecretProviderError('timeout', `${prefix}: no answer from ${where} within ${cfg.timeoutMs} ms`, name)
  }
  if (notFound.has(name)) return new AwsSecretProviderError('not_found', `${prefix}: not found (${name})${said}`, name)
  if (name === 'InvalidRequestException' && /marked for deletion|scheduled for deletion/i.test(e.message ?? '')) {
    return new AwsSecretProviderError('not_found', `${prefix}: the secret is deleted (${name})${said}`, name)
  }
  if (denied.has(name) || status === 401 || status === 403) return new AwsSecretProviderError('access_denied', `${prefix}: access denied (${name}${status ? `, HTTP ${status}` : ''})${said}`, name)
  if (name === 'CredentialsProviderError') {
    return new AwsSecretProviderError(
      'access_denied',
      `${prefix}: no AWS credentials found in the SDK's default chain (environment, shared config, SSO, web identity, container or instance role)`,
      name,
    )
  }
  if (name === 'ResourceExistsException') return new AwsSecretProviderError('invalid_config', `${prefix}: already exists (${name})${said}`, name)
  if (badInput.has(name) || name === 'InvalidRequestException') return new AwsSecretProviderError('invalid_config', `${prefix}: rejected (${name})${said}`, name)
  const code = e.code ?? e.cause?.code
  if (code && networkCodes.has(code)) return new AwsSecretProviderError('unavailable', `${prefix}: cannot reach ${where} (${code})`, name)
  if (/region is missing/i.test(e.message ?? '')) return invalid(`set config region (or AWS_REGION): ${e.message}`)
  return new AwsSecretProviderError('unavailable', `${prefix}: ${name}${status ? ` (HTTP ${status})` : ''}${said}`, name)
}
