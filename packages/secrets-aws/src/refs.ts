import { SecretProviderError } from '@slaw/core/secret-provider'

/** A reference to a Secrets Manager secret: its ARN or name, maybe a version, maybe one key of a JSON value. */
export interface AwsRef {
  secretId: string
  versionId?: string
  versionStage?: string
  jsonKey?: string
}

/**
 * Parses `<ARN or name>[?versionId=<id>][&versionStage=<label>][&jsonKey=<key>]`. `?` never occurs
 * in a secret name or ARN, so the split is unambiguous.
 */
export function parseRef(ref: string): AwsRef {
  const at = ref.indexOf('?')
  const secretId = at < 0 ? ref : ref.slice(0, at)
  if (!secretId) throw new SecretProviderError('not_found', 'aws_secrets_manager: empty secret id in ref')
  const params = new URLSearchParams(at < 0 ? '' : ref.slice(at + 1))
  const out: AwsRef = { secretId }
  for (const key of ['versionId', 'versionStage', 'jsonKey'] as const) {
    const value = params.get(key)
    if (value) out[key] = value
  }
  return out
}

export function formatRef(ref: AwsRef): string {
  const params = new URLSearchParams()
  for (const key of ['versionId', 'versionStage', 'jsonKey'] as const) {
    const value = ref[key]
    if (value !== undefined) params.set(key, value)
  }
  const query = params.toString()
  return query ? `${ref.secretId}?${query}` : ref.secretId
}
