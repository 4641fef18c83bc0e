import { SecretProviderError } from '../../contracts/secret-provider.js'

/**
 * How a secret provider reads its configuration (the vault, AWS and GCP plugins do it at every
 * call): keys it does not know are refused, and each setting is checked for its type. Every
 * problem is a SecretProviderError `invalid_config` whose message starts with the provider's type.
 */

/** `invalid_config`: `<provider>: <message>`. */
export function providerConfigError(provider: string, message: string): SecretProviderError {
  return new SecretProviderError('invalid_config', `${provider}: ${message}`)
}

export interface ProviderConfigReader {
  /** A string setting; undefined when absent or null. */
  string(key: string): string | undefined
  /** A string setting that may not be empty; undefined when absent or null. */
  nonEmptyString(key: string): string | undefined
  /** An integer setting from `min` to `max`; undefined when absent or null. */
  integer(key: string, min: number, max: number): number | undefined
}

/**
 * Checks that `raw` holds only `keys` and answers a reader of its settings; throws
 * `invalid_config` (`unknown config keys …`) otherwise.
 */
export function readProviderConfig(provider: string, keys: readonly string[], raw: Record<string, unknown>): ProviderConfigReader {
  const unknown = Object.keys(raw).filter((k) => !keys.includes(k))
  if (unknown.length) throw providerConfigError(provider, `unknown config keys ${unknown.join(', ')} (${provider} accepts ${keys.join(', ')})`)
  const present = (key: string): unknown => raw[key] ?? undefined
  return {
    string(key) {
      const value = present(key)
      if (value !== undefined && typeof value !== 'string') throw providerConfigError(provider, `config ${key} must be a string`)
      return value
    },
    nonEmptyString(key) {
      const value = present(key)
      if (value !== undefined && (typeof value !== 'string' || !value)) throw providerConfigError(provider, `config ${key} must be a non-empty string`)
      return value
    },
    integer(key, min, max) {
      const value = present(key)
      if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)) {
        throw providerConfigError(provider, `config ${key} must be an integer from ${min} to ${max}`)
      }
      return value
    },
  }
}
