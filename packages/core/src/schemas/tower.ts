import { Type } from '@sinclair/typebox'
import type { TowerStatus } from '../contracts/tower-client.js'
import { Nullable, Timestamp, isoOrNull } from './common.js'

const Mode = Type.Union([Type.Literal('enforce'), Type.Literal('advisory')])

const Limit = Type.Object({
  costLimitCents: Nullable(Type.Integer()),
  tokenLimit: Nullable(Type.Integer()),
  window: Type.String(),
  warnPercent: Type.Integer(),
  mode: Type.Union([Type.Literal('off'), Type.Literal('soft'), Type.Literal('hard')]),
  version: Type.Integer(),
})

/** A record the tower refused (400) or a skill this instance could not apply: parked, the rest flows. */
const Rejection = Type.Object({
  code: Type.String(),
  /** The wire type (`cost_event`, `agent` …) or `skill`. */
  type: Type.String(),
  /** The record's localId, or the skill's key. */
  localId: Type.String(),
  message: Type.String(),
  at: Timestamp,
})

export const TowerStatusSchema = Type.Object(
  {
    state: Type.Union(['disabled', 'disconnected', 'enrolling', 'pending', 'connected', 'unreachable', 'rejected', 'revoked', 'protocol_unsupported'].map((s) => Type.Literal(s))),
    mode: Nullable(Mode),
    towerUrl: Nullable(Type.String()),
    enrollmentState: Nullable(Type.Union([Type.Literal('pending'), Type.Literal('active'), Type.Literal('rejected'), Type.Literal('revoked')])),
    gated: Type.Boolean(),
    instanceId: Nullable(Type.String()),
    machineId: Nullable(Type.String()),
    leader: Type.Boolean(),
    lastHeartbeatAt: Nullable(Timestamp),
    lastSyncAt: Nullable(Timestamp),
    spoolDepth: Type.Integer({ minimum: 0 }),
    appliedLimitVersion: Nullable(Type.Integer()),
    appliedSkillCatalogVersion: Nullable(Type.Integer()),
    limit: Nullable(Limit),
    lastError: Nullable(Type.Object({ code: Type.String(), message: Type.String(), at: Timestamp })),
    rejectedCount: Type.Integer({ minimum: 0 }),
    lastRejection: Nullable(Rejection),
  },
  { $id: 'TowerStatus', title: 'TowerStatus' },
)

export const ConnectTowerBody = Type.Object(
  {
    towerUrl: Type.String({ minLength: 1, maxLength: 2000 }),
    mode: Type.Optional(Mode),
  },
  { additionalProperties: false },
)

export const SkillKeyParams = Type.Object({ key: Type.String({ minLength: 1, maxLength: 200 }) })

export const InstallSkillBody = Type.Object({ squadId: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false })

/** The squad skill the install created or updated, as the skill endpoints present it. */
export const InstalledSkill = Type.Object({ skill: Type.Object({}, { additionalProperties: true }) })

export const presentTowerStatus = (s: TowerStatus) => ({
  ...s,
  lastHeartbeatAt: isoOrNull(s.lastHeartbeatAt),
  lastSyncAt: isoOrNull(s.lastSyncAt),
  lastError: s.lastError ? { code: s.lastError.code, message: s.lastError.message, at: s.lastError.at.toISOString() } : null,
  rejectedCount: s.rejectedCount ?? 0,
  lastRejection: s.lastRejection ? { ...s.lastRejection, at: s.lastRejection.at.toISOString() } : null,
})
