import type { SecretProvider } from '@slaw/core'

/** The shipped secret provider plugins `slaw start` registers when they are installed next to it. */
const secretProviderPlugins = [
  { packageName: '@slaw/secrets-vault', factory: 'vaultProvider' },
  { packageName: '@slaw/secrets-aws', factory: 'awsSecretsManagerProvider' },
  { packageName: '@slaw/secrets-gcp', factory: 'gcpSecretManagerProvider' },
] as const

type Importer = (packageName: string) => Promise<Record<string, unknown>>

/**
 * The secret providers of the plugins that are installed (`npm install @slaw/secrets-aws`, …), each
 * made with its defaults: credentials come from the vendor's own chain, settings from the squad's
 * provider configuration. A plugin that is not installed is left out; one that fails to load is an
 * error, not a silent omission.
 */
export async function installedSecretProviders(load: Importer = (name) => import(name)): Promise<SecretProvider[]> {
  const providers: SecretProvider[] = []
  for (const { packageName, factory } of secretProviderPlugins) {
    let mod: Record<string, unknown>
    try {
      mod = await load(packageName)
    } catch (error) {
      if (isMissing(error, packageName)) continue
      throw error
    }
    const make = mod[factory]
    if (typeof make !== 'function') throw new Error(`${packageName} does not export ${factory}(): is it a matching version?`)
    providers.push((make as () => SecretProvider)())
  }
  return providers
}

/** The package itself is not installed (as opposed to something it imports failing). */
function isMissing(error: unknown, packageName: string): boolean {
  const e = error as { code?: string; message?: string } | undefined
  return (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') && (e.message ?? '').includes(`'${packageName}'`)
}
