import { redactString } from '../foundation/redact.js'

/**
 * Provider configurations hold connection settings only (region, address, mount, project…);
 * credentials come from each provider's own chain. A key is sensitive when, lowercased without
 * separators, it contains one of these words; `secret` alone and `key` alone are not enough (a
 * `secretPrefix` or `kmsKeyId` is a setting), but `secretKey`, `clientSecret` and a bare `secret` are.
 */
const sensitiveWords = [
  'password',
  'passwd',
  'passphrase',
  'privatekey',
  'accesskey',
  'secretkey',
  'secretaccesskey',
  'clientsecret',
  'secretvalue',
  'secretstring',
  'apikey',
  'credential',
  'sessiontoken',
  'authorization',
  'cookie',
  'token(?!s|ttl|path|url|endpoint)',
  'certificatekey',
  'pemkey',
]
const sensitivePart = new RegExp(`(${sensitiveWords.join('|')})`)
const sensitiveExact = new Set(['secret', 'auth', 'pwd', 'pass', 'key', 'jwt', 'pem', 'cert', 'signature'])

export function isSensitiveConfigKey(key: string): boolean {
  const k = key.toLowerCase().replace(/[^a-z0-9]/g, '')
  return sensitiveExact.has(k) || sensitivePart.test(k)
}

/**
 * JSON pointers of every sensitive entry in `value`, at any depth (objects and arrays): a sensitive
 * key, or a string that looks like a credential (a bearer token, a JWT, a private key block, a
 * well-known token format).
 */
export function findSensitiveConfig(value: unknown, path = ''): string[] {
  if (typeof value === 'string') return redactString(value) !== value ? [path || '/'] : []
  if (Array.isArray(value)) return value.flatMap((v, i) => findSensitiveConfig(v, `${path}/${i}`))
  if (value && typeof value === 'object') {
    return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => {
      const here = `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`
      return isSensitiveConfigKey(k) ? [here] : findSensitiveConfig(v, here)
    })
  }
  return []
}
