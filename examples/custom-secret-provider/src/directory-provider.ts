import { randomBytes } from 'node:crypto'
import { access, constants, mkdir, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises'
import { isAbsolute, join } from 'node:path'
// Only the public entry points of slaw: the contract and its error.
import { SecretProviderError, type SecretProvider } from '@slaw/core/secret-provider'

export interface DirectorySecretProviderOptions {
  /** The directory used when a provider configuration names none. */
  defaultDirectory?: string
}

/** The one config key: where the files live. A path is not a credential, so a config may hold it. */
export const directoryConfigKeys = ['directory'] as const

/**
 * A `SecretProvider` that keeps each version of a secret in its own file, mode 0600:
 * `<directory>/<secretId>/<version, ten digits>-<nonce>`. The ref is that path relative to the
 * directory. Good for a single node with an encrypted disk, and as an example of the contract.
 */
export function directorySecretProvider(options: DirectorySecretProviderOptions = {}): SecretProvider {
  const directoryOf = (config: Record<string, unknown>): string => {
    const unknown = Object.keys(config).filter((k) => !(directoryConfigKeys as readonly string[]).includes(k))
    if (unknown.length) throw new SecretProviderError('invalid_config', `directory_files: unknown config keys ${unknown.join(', ')}`)
    const directory = config.directory ?? options.defaultDirectory
    if (typeof directory !== 'string' || !isAbsolute(directory)) {
      throw new SecretProviderError('invalid_config', 'directory_files: config directory must be an absolute path')
    }
    return directory
  }

  /** A ref as a path inside the directory; anything that could step outside it is simply not found. */
  const pathOf = (directory: string, ref: string): { secretId: string; file?: string } => {
    const [secretId, file, ...rest] = ref.split('/')
    const safe = (part: string | undefined) => part !== undefined && /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,254}$/.test(part) && part !== '..'
    if (!safe(secretId) || rest.length || (file !== undefined && !safe(file))) {
      throw new SecretProviderError('not_found', `directory_files: ${ref.slice(0, 200)} is not a ref of this provider`)
    }
    return { secretId: secretId!, ...(file !== undefined ? { file } : {}) }
  }

  /** A filesystem failure in words: what was done, to which ref, and the error code; never a value. */
  const fsError = (error: unknown, what: string): SecretProviderError => {
    const code = (error as NodeJS.ErrnoException | undefined)?.code ?? 'unknown error'
    if (code === 'ENOENT') return new SecretProviderError('not_found', `directory_files ${what}: not found`)
    if (code === 'EACCES' || code === 'EPERM') return new SecretProviderError('access_denied', `directory_files ${what}: permission denied (${code})`)
    return new SecretProviderError('unavailable', `directory_files ${what}: ${code}`)
  }

  const latestFile = async (directory: string, secretId: string): Promise<string> => {
    let files: string[]
    try {
      files = await readdir(join(directory, secretId))
    } catch (error) {
      throw fsError(error, `read ${secretId}`)
    }
    const latest = files
      .filter((f) => /^\d{10}-[0-9a-f]{16}$/.test(f))
      .sort()
      .at(-1)
    if (!latest) throw new SecretProviderError('not_found', `directory_files read ${secretId}: no version`)
    return latest
  }

  return {
    type: 'directory_files',
    configKeys: directoryConfigKeys,

    async store({ secretId, version, value, config }) {
      const directory = directoryOf(config)
      const file = `${String(version).padStart(10, '0')}-${randomBytes(8).toString('hex')}`
      const ref = `${secretId}/${file}`
      const { secretId: safeId } = pathOf(directory, ref)
      const path = join(directory, safeId, file)
      try {
        await mkdir(join(directory, safeId), { recursive: true, mode: 0o700 })
        // Write aside, then rename: a reader never sees half a value.
        await writeFile(`${path}.tmp`, value, { encoding: 'utf8', mode: 0o600, flag: 'wx' })
        await rename(`${path}.tmp`, path)
      } catch (error) {
        throw fsError(error, `store ${ref}`)
      }
      return { ref }
    },

    async resolve({ ref, config }) {
      const directory = directoryOf(config)
      const { secretId, file } = pathOf(directory, ref)
      const name = file ?? (await latestFile(directory, secretId))
      try {
        return await readFile(join(directory, secretId, name), 'utf8')
      } catch (error) {
        throw fsError(error, `read ${ref}`)
      }
    },

    async delete({ ref, config }) {
      const directory = directoryOf(config)
      const { secretId, file } = pathOf(directory, ref)
      try {
        if (file) await rm(join(directory, secretId, file), { force: true })
        else await rm(join(directory, secretId), { recursive: true, force: true })
        // Drop the secret's directory with its last version, so it leaves listings.
        await rmdir(join(directory, secretId)).catch(() => {})
      } catch (error) {
        throw fsError(error, `delete ${ref}`)
      }
    },

    async health(config) {
      try {
        const directory = directoryOf(config)
        if (!(await stat(directory)).isDirectory()) return { ok: false, message: `directory_files: ${directory} is not a directory` }
        await access(directory, constants.R_OK | constants.W_OK)
        return { ok: true }
      } catch (error) {
        if (error instanceof SecretProviderError) return { ok: false, message: error.message }
        return { ok: false, message: fsError(error, 'health').message }
      }
    },

    async listRemote({ config, query, pageSize, nextToken }) {
      const directory = directoryOf(config)
      let names: string[]
      try {
        names = (await readdir(directory, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name)
      } catch (error) {
        throw fsError(error, 'list')
      }
      const matches = names.filter((n) => !query || n.includes(query)).sort()
      const start = nextToken ? Number(nextToken) : 0
      if (!Number.isInteger(start) || start < 0) throw new SecretProviderError('invalid_config', 'directory_files: nextToken is not one this provider gave')
      const items = matches.slice(start, start + pageSize).map((name) => ({ externalRef: name, name }))
      return start + pageSize < matches.length ? { items, nextToken: String(start + pageSize) } : { items }
    },
  }
}
