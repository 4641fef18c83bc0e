// @slaw/secrets-gcp: secret values in Google Cloud Secret Manager, for slaw's `gcp_secret_manager` provider type.
export { gcpSecretManagerProvider, gcpConfigKeys } from './gcp-provider.js'
export type { GcpSecretManagerProviderOptions } from './gcp-provider.js'
