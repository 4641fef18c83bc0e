/**
 * SecretProvider: where secret values live. slaw stores metadata; a provider stores or resolves
 * values. `local_encrypted` ships in core; vault, AWS and GCP providers are plugins.
 * A provider never logs or returns a value anywhere but `resolve`.
 */
export interface SecretProvider {
  /** e.g. `local_encrypted`, `vault`. */
  readonly type: string
  /** Config keys a provider configuration may hold; anything else is rejected. */
  readonly configKeys: readonly string[]
  /** Stores a value and returns a provider-side reference to that version. */
  store(input: { secretId: string; version: number; value: string; config: Record<string, unknown> }): Promise<{ ref: string }>
  resolve(input: { ref: string; config: Record<string, unknown> }): Promise<string>
  delete(input: { ref: string; config: Record<string, unknown> }): Promise<void>
  health(config: Record<string, unknown>): Promise<{ ok: boolean; message?: string }>
  /** Remote secrets a provider can list, for import; providers that cannot list omit it. */
  listRemote?(input: { config: Record<string, unknown>; query?: string; pageSize: number; nextToken?: string }): Promise<{
    items: Array<{ externalRef: string; name: string }>
    nextToken?: string
  }>
}
