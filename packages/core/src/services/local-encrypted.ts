import type { SecretProvider } from '../contracts/secret-provider.js'
import { SecretProviderError } from '../contracts/secret-provider.js'
import type { MasterKey } from './master-key.js'

export const localEncryptedType = 'local_encrypted'

/** The AAD of a local secret version: its ciphertext cannot be moved to another secret or version. */
export const localSecretAad = (secretId: string, version: number): string => `slaw-secret:${secretId}:${version}`

/**
 * The built-in provider: the value is encrypted with AES-256-GCM under the instance's master key,
 * a fresh 96-bit nonce per version, bound by AAD to the secret's id and version. The envelope is the
 * version's `ref`, kept in slaw's own storage; nothing leaves the instance.
 */
export function localEncryptedProvider(masterKey: () => MasterKey): SecretProvider {
  return {
    type: localEncryptedType,
    configKeys: [],
    async store({ secretId, version, value }) {
      return { ref: masterKey().encrypt(value, localSecretAad(secretId, version)) }
    },
    async resolve({ ref, secretId, version }) {
      if (secretId === undefined || version === undefined) {
        throw new SecretProviderError('invalid_config', 'local_encrypted resolves only with the secret id and version its ref belongs to.')
      }
      // MasterKey.decrypt throws a clear error for a wrong key or tampered data; never garbage.
      return masterKey().decrypt(ref, localSecretAad(secretId, version))
    },
    // The envelope lives in the version row; deleting the row deletes the value.
    async delete() {},
    async health() {
      const key = masterKey()
      const probe = key.encrypt('health', 'slaw-health')
      return key.decrypt(probe, 'slaw-health') === 'health' ? { ok: true, message: `master key ${key.keyId}` } : { ok: false, message: 'master key round trip failed' }
    },
  }
}
