/**
 * SecretProvider: where secret values live. slaw stores metadata; a provider stores or resolves
 * values. `local_encrypted` ships in core; vault, AWS and GCP providers are plugins.
 * A provider never logs or returns a value anywhere but `resolve`, and never puts one in an error.
 */
export interface SecretProvider {
  /** e.g. `local_encrypted`, `vault`. */
  readonly type: string
  /** Config keys a provider configuration may hold; anything else is rejected. */
  readonly configKeys: readonly string[]
  /** Stores a value and returns a provider-side reference to that version. */
  store(input: { secretId: string; version: number; value: string; config: Record<string, unknown> }): Promise<{ ref: string }>
  /**
   * Reads the value a `ref` names. slaw also passes the secret's id and the version the ref belongs
   * to (a provider may bind its ciphertext to them, as `local_encrypted` does).
   */
  resolve(input: { ref: string; config: Record<string, unknown>; secretId?: string; version?: number }): Promise<string>
  delete(input: { ref: string; config: Record<string, unknown> }): Promise<void>
  health(config: Record<string, unknown>): Promise<{ ok: boolean; message?: string }>
  /**
   * Problems with a configuration this node refuses, checked when a configuration is written or
   * previewed (400 `invalid_payload`, each `path` under `/config`): e.g. an address the node's
   * credentials may not go to. The provider refuses the same config again when it is used.
   */
  validateConfig?(config: Record<string, unknown>): Array<{ path: string; message: string }>
  /** Remote secrets a provider can list, for import; providers that cannot list omit it. */
  listRemote?(input: { config: Record<string, unknown>; query?: string; pageSize: number; nextToken?: string }): Promise<{
    items: Array<{ externalRef: string; name: string }>
    nextToken?: string
  }>
  /** Releases clients the provider opened. */
  close?(): Promise<void>
}

/** Why a provider call failed, in words slaw maps to access-event error codes and HTTP answers. */
export type SecretProviderErrorCode = 'not_found' | 'access_denied' | 'unavailable' | 'timeout' | 'invalid_config'

/**
 * The one error a provider throws for an expected failure. Its message names the failure and the
 * reference, never a value or a credential.
 */
export class SecretProviderError extends Error {
  constructor(
    readonly code: SecretProviderErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'SecretProviderError'
  }

  /**
   * `instanceof` holds across copies of @slaw/core: the bundled `slaw` command carries its own
   * core, and a provider plugin installed next to it throws its core's class. A subclass keeps
   * the usual prototype check.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: the class `instanceof` asks about, maybe a subclass
    const asked: unknown = this
    if (Function.prototype[Symbol.hasInstance].call(asked, value)) return true
    return asked === SecretProviderError && typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[providerErrorBrand] === true
  }
}

const providerErrorBrand = Symbol.for('slaw.SecretProviderError')
Object.defineProperty(SecretProviderError.prototype, providerErrorBrand, { value: true })
