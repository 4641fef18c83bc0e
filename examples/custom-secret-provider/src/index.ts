export { directorySecretProvider, directoryConfigKeys } from './directory-provider.js'
export type { DirectorySecretProviderOptions } from './directory-provider.js'
