import type { SecretProvider } from '../../contracts/secret-provider.js'
import { SecretProviderError } from '../../contracts/secret-provider.js'
import { MasterKey } from './master-key.js'

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
      const key = masterKey()
      const written = MasterKey.envelopeKeyId(ref)
      if (written === undefined) throw new SecretProviderError('not_found', `local_encrypted: no value for secret ${secretId} version ${version} (not an envelope).`)
      if (written !== key.keyId) {
        throw new SecretProviderError('access_denied', `local_encrypted: the value was written under master key ${written}, but this node holds ${key.keyId}: check SVC_MASTER_KEY.`)
      }
      try {
        // GCM authentication refuses a wrong key, another secret's envelope or tampered data: never garbage.
        return key.decrypt(ref, localSecretAad(secretId, version))
      } catch {
        throw new SecretProviderError('not_found', `local_encrypted: no value for secret ${secretId} version ${version} (the envelope belongs to another secret or version, or was tampered with).`)
      }
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
