import t from 'tap'
import { installedSecretProviders } from '../src/secret-providers.js'

const missing = (name: string) => Object.assign(new Error(`Cannot find package '${name}' imported from /app/node_modules/@slaw/cli/dist/index.js`), { code: 'ERR_MODULE_NOT_FOUND' })

void t.test('slaw start registers the secret provider plugins that are installed', async (t) => {
  const providers = await installedSecretProviders()
  t.same(
    providers.map((p) => p.type),
    ['vault', 'aws_secrets_manager', 'gcp_secret_manager'],
    'all three, in this workspace',
  )
  await Promise.all(providers.map((p) => p.close?.()))
})

void t.test('a plugin that is not installed is left out; one that fails to load is an error', async (t) => {
  const real = (name: string) => import(name) as Promise<Record<string, unknown>>
  const withoutAws = await installedSecretProviders((name) => (name === '@slaw/secrets-aws' ? Promise.reject(missing(name)) : real(name)))
  t.same(
    withoutAws.map((p) => p.type),
    ['vault', 'gcp_secret_manager'],
    'the missing one is skipped',
  )
  await t.rejects(
    installedSecretProviders((name) => (name === '@slaw/secrets-gcp' ? Promise.reject(missing('google-gax')) : real(name))),
    { code: 'ERR_MODULE_NOT_FOUND', message: /google-gax/ },
    'a dependency of an installed plugin that is missing is not taken for the plugin being absent',
  )
  await t.rejects(
    installedSecretProviders(async () => ({})),
    { message: /@slaw\/secrets-vault does not export vaultProvider\(\)/ },
    'a plugin without its factory',
  )
})
