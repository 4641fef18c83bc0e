/**
 * `@slaw/core/secret-provider`: what a secret provider plugin needs from core, and nothing else. A
 * plugin that imports it loads a few kilobytes, not the whole of core: the bundled `slaw` command
 * carries its own core, and a plugin installed next to it would otherwise load a second one.
 */
export type { SecretProvider, SecretProviderErrorCode } from '../contracts/secret-provider.js'
export { SecretProviderError } from '../contracts/secret-provider.js'
export { endpointAllowed, endpointOrigin, parseEndpointAllowList } from '../services/secrets/endpoint-allowlist.js'
export { providerConfigError, readProviderConfig, type ProviderConfigReader } from '../services/secrets/provider-config.js'
