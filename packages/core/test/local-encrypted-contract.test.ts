import t from 'tap'
import { MasterKey } from '@slaw/core'
import { secretProviderContract } from '@slaw/core/testing'
import { localEncryptedProvider } from '../src/services/secrets/local-encrypted.js'

// The built-in provider keeps the contract every plugin keeps. Its ref is the value itself, sealed
// under the master key to its secret and version, and slaw's storage holds it (valueInRef).
void t.test('local_encrypted passes the secret provider contract', async (t) => {
  const key = MasterKey.generate()
  // Sealed by this node's key, but to another secret: presented for the kit's secret, it names nothing.
  const elsewhere = key.encrypt('sealed to another secret', 'slaw-secret:00000000-0000-0000-0000-000000000000:1')
  await secretProviderContract(t, () => localEncryptedProvider(() => key), { valueInRef: true, emptyValues: true, unknownRefs: [elsewhere] })
})
