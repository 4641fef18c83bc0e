import { chmod, mkdir, open, readFile, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Storage } from '../../contracts/storage.js'
import type { Logger } from '../foundation/context.js'
import { MasterKey } from './master-key.js'

/**
 * Where the master key comes from: its text form (SVC_MASTER_KEY: 64 hex digits or base64 of 32
 * bytes), raw bytes, a `MasterKey`, or `{ file }`: a key file, generated once (mode 0600) when absent.
 */
export type MasterKeyOption = string | Uint8Array | MasterKey | { file: string }

/** The file name of a generated key inside an embedded storage's data directory. */
export const masterKeyFileName = 'master.key'

/** Thrown at start when this node's key is not the key the instance's data is encrypted under. */
export class MasterKeyMismatchError extends Error {
  constructor(
    readonly nodeKeyId: string,
    readonly storedKeyId: string,
  ) {
    super(
      `Master key mismatch: this node holds key ${nodeKeyId} but the instance's data is encrypted under key ${storedKeyId}; ` +
        "set SVC_MASTER_KEY to the instance's key (every node must share it), or rotate with `slaw secrets rotate-master-key`.",
    )
    this.name = 'MasterKeyMismatchError'
  }
}

/** Thrown at start when the master key file is open to its group or to others. */
export class MasterKeyFileModeError extends Error {
  constructor(readonly file: string) {
    super(
      `The master key file ${file} is readable or writable by its group or others; run \`chmod 600 ${file}\` ` +
        '(and rotate the key with `slaw secrets rotate-master-key` if someone else may have read it).',
    )
    this.name = 'MasterKeyFileModeError'
  }
}

export interface LoadedMasterKey {
  key: MasterKey
  /** `given`: passed in; `file`: read from or generated into a key file; `ephemeral`: random, this process only. */
  source: 'given' | 'file' | 'ephemeral'
  file?: string
}

/**
 * Picks the master key: the option when given; else a key file in the storage's data directory
 * (embedded PGlite on disk); else, on a memory storage only, a random key for this process.
 * Any other storage without a key throws `MasterKeyRequiredError`.
 */
export async function loadMasterKey(option: MasterKeyOption | undefined, storage: Storage, log: Logger): Promise<LoadedMasterKey> {
  if (option instanceof MasterKey) return { key: option, source: 'given' }
  if (typeof option === 'string') return { key: MasterKey.parse(option), source: 'given' }
  if (option instanceof Uint8Array) return { key: MasterKey.fromBytes(option), source: 'given' }
  const file = option?.file ?? (storage.dataDir ? join(storage.dataDir, masterKeyFileName) : undefined)
  if (file) return { key: await readOrCreateKeyFile(file, log), source: 'file', file }
  // A random key is only safe where the data dies with the process too: on a storage that outlives
  // it, everything encrypted under that key (local secrets, HMAC and webhook secrets) would be lost
  // at the next restart and unreadable by every other node.
  if (storage.inMemory !== true) throw new MasterKeyRequiredError(storage.name)
  return { key: MasterKey.generate(), source: 'ephemeral' }
}

/** Thrown at start when a storage that outlives the process is given no master key. */
export class MasterKeyRequiredError extends Error {
  constructor(readonly storageName: string) {
    super(
      `No master key: storage "${storageName}" outlives this process, and a random key would lose every encrypted value at the next restart; ` +
        'pass createInstance({ masterKey }) (or { masterKey: { file } }), or set SVC_MASTER_KEY (the same key on every node).',
    )
    this.name = 'MasterKeyRequiredError'
  }
}

/**
 * Reads the key file, or creates it once with a fresh key, mode 0600. Creation is exclusive
 * (`wx`): two processes starting together end up with the same key.
 */
export async function readOrCreateKeyFile(file: string, log?: Logger): Promise<MasterKey> {
  try {
    return await readKeyFile(file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  await mkdir(dirname(file), { recursive: true })
  const key = MasterKey.generate()
  try {
    const handle = await open(file, 'wx', 0o600)
    try {
      await handle.writeFile(`${key.toBase64()}\n`)
      await handle.sync()
    } finally {
      await handle.close()
    }
    // The process umask may have narrowed the mode further; never let it be wider.
    await chmod(file, 0o600)
    log?.warn({ file, keyId: key.keyId }, 'Generated a master key into the data directory (mode 0600); back it up: encrypted secrets cannot be read without it.')
    return key
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return readKeyFile(file)
    throw err
  }
}

async function readKeyFile(file: string): Promise<MasterKey> {
  // Refused rather than silently narrowed: a key others could read may already be copied, which
  // only its owner can judge (chmod 600, and rotate the key if it may have leaked).
  if (process.platform !== 'win32' && ((await stat(file)).mode & 0o077) !== 0) throw new MasterKeyFileModeError(file)
  const text = await readFile(file, 'utf8')
  try {
    return MasterKey.parse(text)
  } catch {
    throw new Error(`The master key file ${file} does not hold a 32-byte key (64 hex digits or base64).`)
  }
}

/**
 * Records the key id on the first start, and refuses a node whose key differs from the recorded
 * one (one line naming SVC_MASTER_KEY). Call after migrations.
 *
 * A process-only (ephemeral) key is neither recorded nor refused: it never was the instance's key,
 * and several keyless processes (tests, scripts) may share one database. What it encrypts cannot
 * be read by any other process; a warning says so when the storage already records another key.
 */
export async function checkMasterKey(storage: Storage, loaded: LoadedMasterKey, log?: Logger): Promise<void> {
  const { key } = loaded
  if (loaded.source === 'ephemeral') {
    const stored = await storage.secrets.getMasterKeyId()
    if (stored !== undefined && stored !== key.keyId) {
      log?.warn({ storedKeyId: stored }, `This storage's data is encrypted under master key ${stored}; without SVC_MASTER_KEY this process cannot read it.`)
    }
    return
  }
  const stored = await storage.secrets.claimMasterKeyId(key.keyId)
  if (stored !== key.keyId) throw new MasterKeyMismatchError(key.keyId, stored)
}
