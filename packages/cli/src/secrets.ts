import { existsSync } from 'node:fs'
import { readFile, rename, writeFile, chmod } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { MasterKey, masterKeyFileName, rotateMasterKey, type Storage } from '@slaw/core'
import { ConfigError } from './config.js'

const secretsUsage = `Usage: slaw secrets rotate-master-key --from-env OLD_VAR --to-env NEW_VAR [--data-dir DIR]

  Re-encrypts every value slaw encrypted with the master key (local secrets, webhook HMAC secrets)
  from the key in $OLD_VAR to the key in $NEW_VAR, in one transaction, and records the new key id.
  Storage is chosen as for \`slaw start\` (DATABASE_URL, else SVC_DATA_DIR / --data-dir). Stop every
  node first; start them again with SVC_MASTER_KEY set to the new key. A generated key file in the
  data directory that holds the old key is replaced by the new key.
`

/** The master-key file `slaw start` uses when SVC_MASTER_KEY is unset, or undefined for memory://. */
export function masterKeyFile(dataDir: string): string | undefined {
  return dataDir === 'memory://' ? undefined : join(dataDir, masterKeyFileName)
}

function keyFromEnv(flag: string, name: string | undefined, env: NodeJS.ProcessEnv): MasterKey {
  if (!name) throw new ConfigError(`${flag} names the environment variable holding a master key`)
  const text = env[name]
  if (!text) throw new ConfigError(`${flag} ${name}: the environment variable ${name} is not set`)
  try {
    return MasterKey.parse(text)
  } catch {
    throw new ConfigError(`${flag} ${name}: $${name} is not a 32-byte key (64 hex digits or base64)`)
  }
}

/** `slaw secrets <subcommand>`; resolves to an exit code. */
export async function secretsCommand(argv: string[], env: NodeJS.ProcessEnv, print: (line: string) => void): Promise<number> {
  const [sub, ...rest] = argv
  if (sub !== 'rotate-master-key') {
    print(secretsUsage)
    return sub === undefined || sub === 'help' ? 0 : 2
  }
  const { values } = parseArgs({ args: rest, options: { 'from-env': { type: 'string' }, 'to-env': { type: 'string' }, 'data-dir': { type: 'string' } }, strict: true, allowPositionals: false })
  const from = keyFromEnv('--from-env', values['from-env'], env)
  const to = keyFromEnv('--to-env', values['to-env'], env)
  const dataDir = values['data-dir'] ?? env.SVC_DATA_DIR ?? './.slaw'
  if (!env.DATABASE_URL && dataDir === 'memory://') throw new ConfigError('nothing to rotate in memory:// storage')
  // The storage this command uses, and only it, is loaded.
  const storage: Storage = env.DATABASE_URL ? (await import('@slaw/storage-pg')).pgStorage({ url: env.DATABASE_URL }) : await (await import('@slaw/storage-pg/pglite')).pgliteStorage({ dataDir })
  try {
    await storage.migrate()
    const report = await rotateMasterKey(storage, from, to)
    for (const c of report.columns) print(`  ${c.name}: ${c.rewritten} value(s) re-encrypted`)
    print(`Master key rotated from ${report.fromKeyId} to ${report.toKeyId}.`)
  } finally {
    await storage.close()
  }
  const file = masterKeyFile(dataDir)
  if (file && existsSync(file)) {
    let held: MasterKey | undefined
    try {
      held = MasterKey.parse(await readFile(file, 'utf8'))
    } catch {
      held = undefined
    }
    if (held?.keyId === from.keyId) {
      // Write then rename: the file is never half-written.
      const tmp = `${file}.${process.pid}.tmp`
      await writeFile(tmp, `${to.toBase64()}\n`, { mode: 0o600 })
      await chmod(tmp, 0o600)
      await rename(tmp, file)
      print(`The key file ${file} now holds the new key.`)
    }
  }
  print('Start every node with SVC_MASTER_KEY set to the new key (or the updated key file).')
  return 0
}
