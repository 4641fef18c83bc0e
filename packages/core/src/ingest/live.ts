import { Type, type Static } from '@sinclair/typebox'
import { DiscriminatedUnion, ProtocolVersion } from './common.js'
import { Fact } from './sync.js'

/**
 * The live channel, `{tower_url}/api/ingest/v1/live` (WebSocket), opened on `request_live_stream`.
 * The instance says hello with its key, gets an ack, then streams fact frames and pings until the
 * requested duration passes or `stop_live_stream` arrives.
 */
export const LiveHello = Type.Object({ type: Type.Literal('hello'), protocolVersion: ProtocolVersion, apiKey: Type.String({ maxLength: 512 }) })
export const LiveFact = Type.Object({ type: Type.Literal('fact'), event: Fact })
export const LivePing = Type.Object({ type: Type.Literal('ping') })

/** Frames an instance sends. */
export const LiveClientFrame = DiscriminatedUnion('type', [LiveHello, LiveFact, LivePing])
export type LiveClientFrame = Static<typeof LiveClientFrame>

export const LiveAck = Type.Object({ type: Type.Literal('ack'), subscribed: Type.Boolean() })
export const LivePong = Type.Object({ type: Type.Literal('pong') })
/** An error on the channel: the same codes as the HTTP calls; auth errors close the socket. */
export const LiveError = Type.Object({ type: Type.Literal('error'), code: Type.String(), error: Type.String() })

/** Frames a tower sends. */
export const LiveServerFrame = DiscriminatedUnion('type', [LiveAck, LivePong, LiveError])
export type LiveServerFrame = Static<typeof LiveServerFrame>
export type LiveHello = Static<typeof LiveHello>
