// @slaw/secrets-vault: secret values in HashiCorp Vault KV v2, for slaw's `vault` provider type.
export { vaultProvider, vaultConfigKeys } from './vault-provider.js'
export type { VaultProviderOptions, VaultTokenSource } from './vault-provider.js'
export { parseRef as parseVaultRef, formatRef as formatVaultRef } from './refs.js'
export type { VaultRef } from './refs.js'
