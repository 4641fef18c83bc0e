import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import os from 'node:os'
import type { InstanceIdentity } from '@slaw/core/ingest'

const INSTANCE_ID = /^[a-zA-Z0-9_-]{1,64}$/

export function isValidInstanceId(id: string): boolean {
  return INSTANCE_ID.test(id)
}

/** A new instance id: `slaw-` and 16 random hex characters. */
export function newInstanceId(): string {
  return `slaw-${randomBytes(8).toString('hex')}`
}

export function newSalt(): string {
  return randomBytes(16).toString('hex')
}

/**
 * A stable identifier of this host: the OS machine id where there is one, else the host name with
 * the first hardware address. It never leaves the process: only its salted hash does.
 */
function hostIdentifier(): string {
  for (const file of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    try {
      const id = readFileSync(file, 'utf8').trim()
      if (id) return id
    } catch {
      // not on this system
    }
  }
  const mac = Object.values(os.networkInterfaces())
    .flat()
    .find((i) => i && !i.internal && i.mac && i.mac !== '00:00:00:00:00:00')?.mac
  return `${os.hostname()}|${process.platform}|${process.arch}|${mac ?? ''}`
}

/** machineId: hex SHA-256 of the salt and the host identifier (64 characters, within 8–128). */
export function machineIdFor(salt: string, host = hostIdentifier()): string {
  return createHash('sha256').update(salt).update('\0').update(host).digest('hex')
}

export function osName(): InstanceIdentity['os'] {
  const p = process.platform
  return p === 'darwin' || p === 'win32' ? p : 'linux'
}

export function hostName(): string {
  return (os.hostname() || 'localhost').slice(0, 255)
}
