import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP, type LookupFunction } from 'node:net'

/**
 * Where the http adapter may connect. Checked on the address a host name RESOLVES to, and the
 * connection goes to that very address (the check runs inside the socket's own lookup), so a name
 * that resolves somewhere harmless at save time and to the metadata service at wake time is caught.
 */
export interface EgressPolicy {
  /** 127.0.0.0/8, ::1 (and 0.0.0.0, which reaches this host). Default true: agents on the same host, tests. */
  loopback?: boolean
  /** 10/8, 172.16/12, 192.168/16, 100.64/10 (carrier-grade NAT), fc00::/7. Default true: agents on the private network. */
  privateNetworks?: boolean
  /** 169.254/16 and fe80::/10, where cloud metadata services answer (169.254.169.254, fd00:ec2::254 too). Default false. */
  linkLocal?: boolean
}

export type AddressClass = 'loopback' | 'private' | 'link-local' | 'multicast' | 'public'

const rules: Array<[AddressClass, BlockList]> = []
function rule(cls: AddressClass, subnets: Array<[string, number, 'ipv4' | 'ipv6']>): void {
  const list = new BlockList()
  for (const [net, prefix, type] of subnets) list.addSubnet(net, prefix, type)
  rules.push([cls, list])
}
rule('link-local', [
  ['169.254.0.0', 16, 'ipv4'],
  ['fe80::', 10, 'ipv6'],
  ['fd00:ec2::254', 128, 'ipv6'],
])
rule('loopback', [
  ['127.0.0.0', 8, 'ipv4'],
  ['0.0.0.0', 8, 'ipv4'],
  ['::1', 128, 'ipv6'],
  ['::', 128, 'ipv6'],
])
rule('private', [
  ['10.0.0.0', 8, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['fc00::', 7, 'ipv6'],
])
rule('multicast', [
  ['224.0.0.0', 4, 'ipv4'],
  ['255.255.255.255', 32, 'ipv4'],
  ['ff00::', 8, 'ipv6'],
])

/** An IPv4-mapped IPv6 address (`::ffff:169.254.169.254`, `::ffff:a9fe:a9fe`) as the IPv4 it is. */
function unmapped(address: string): string {
  const a = address.toLowerCase()
  const m = /^(?:0*:)*:?ffff:(.+)$/.exec(a)
  if (!m || !a.startsWith('::')) return address
  const rest = m[1]!
  if (isIP(rest) === 4) return rest
  const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(rest)
  if (!hex) return address
  const hi = parseInt(hex[1]!, 16)
  const lo = parseInt(hex[2]!, 16)
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
}

export function classifyAddress(address: string): AddressClass {
  const ip = unmapped(address.replace(/^\[|\]$/g, ''))
  const type = isIP(ip) === 6 ? 'ipv6' : 'ipv4'
  for (const [cls, list] of rules) if (list.check(ip, type)) return cls
  return 'public'
}

const describe: Record<Exclude<AddressClass, 'public'>, string> = {
  loopback: 'a loopback address',
  private: 'a private-network address',
  'link-local': 'a link-local address (where cloud metadata services answer)',
  multicast: 'a multicast or broadcast address',
}

/** Why `address` is refused under `policy`, or undefined when it may be called. */
export function egressRefusal(address: string, policy: EgressPolicy): string | undefined {
  const cls = classifyAddress(address)
  const allowed =
    cls === 'public' || (cls === 'loopback' && policy.loopback !== false) || (cls === 'private' && policy.privateNetworks !== false) || (cls === 'link-local' && policy.linkLocal === true)
  return allowed ? undefined : `${address} is ${describe[cls as Exclude<AddressClass, 'public'>]}, which this node's egress policy refuses`
}

/** The error a refused connection fails with (before any byte is sent). */
export class EgressRefusedError extends Error {
  readonly code = 'EGRESS_REFUSED'
  constructor(message: string) {
    super(message)
    this.name = 'EgressRefusedError'
  }
}

/**
 * A socket `lookup` that resolves every address of the host and refuses the connection when any
 * of them is refused (a name with one harmless and one metadata address is refused: the socket
 * could pick either). `onResolved` sees the addresses that will be used.
 */
export function guardedLookup(policy: EgressPolicy, onResolved?: (addresses: string[]) => void): LookupFunction {
  return ((hostname: string, options: { all?: boolean; family?: number }, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '')
      for (const a of addresses) {
        const refused = egressRefusal(a.address, policy)
        if (refused) return callback(new EgressRefusedError(`${hostname} resolves to ${refused}`), '')
      }
      onResolved?.(addresses.map((a) => a.address))
      if (options.all) callback(null, addresses)
      else callback(null, addresses[0]!.address, addresses[0]!.family)
    })
  }) as unknown as LookupFunction
}
