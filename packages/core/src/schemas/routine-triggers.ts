import { Type, type Static } from '@sinclair/typebox'
import { RoutineTriggerRecord, signingModes, type RoutineTrigger } from '../contracts/routines.js'
import { OneOf } from '../records/fields.js'
import { Nullable, Timestamp, Uuid, iso, isoOrNull } from './common.js'

const SigningMode = OneOf(signingModes)
const ReplayWindowSec = Type.Integer({ minimum: 30, maximum: 86_400 })
const Label = Nullable(Type.String({ maxLength: 200 }))
const CronExpression = Type.String({ minLength: 9, maxLength: 200 })
const Timezone = Type.String({ minLength: 1, maxLength: 64 })

/** A trigger, discriminated by `kind` (docs/routines.md). */
export const CreateTriggerBody = Type.Union([
  Type.Object(
    { kind: Type.Literal('schedule'), label: Type.Optional(Label), enabled: Type.Optional(Type.Boolean()), cronExpression: CronExpression, timezone: Type.Optional(Timezone) },
    { additionalProperties: false },
  ),
  Type.Object(
    { kind: Type.Literal('webhook'), label: Type.Optional(Label), enabled: Type.Optional(Type.Boolean()), signingMode: Type.Optional(SigningMode), replayWindowSec: Type.Optional(ReplayWindowSec) },
    { additionalProperties: false },
  ),
  Type.Object({ kind: Type.Literal('api'), label: Type.Optional(Label), enabled: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
])

export const UpdateTriggerBody = Type.Object(
  {
    label: Type.Optional(Label),
    enabled: Type.Optional(Type.Boolean()),
    cronExpression: Type.Optional(CronExpression),
    timezone: Type.Optional(Timezone),
    signingMode: Type.Optional(SigningMode),
    replayWindowSec: Type.Optional(ReplayWindowSec),
  },
  { additionalProperties: false },
)

/** A trigger as responses show it: never its secret, hash or ciphertext (fields are picked, not omitted). */
export const RoutineTriggerSchema = Type.Object(
  {
    ...Type.Pick(RoutineTriggerRecord, ['id', 'routineId', 'kind', 'label', 'enabled', 'cronExpression', 'timezone', 'nextFireAt', 'signingMode', 'replayWindowSec', 'publicId']).properties,
    /** The path to POST to (webhook and api triggers). */
    fireUrl: Nullable(Type.String()),
    ...Type.Pick(RoutineTriggerRecord, ['secretRotatedAt', 'lastFiredAt', 'createdAt', 'updatedAt']).properties,
  },
  { $id: 'RoutineTrigger', title: 'RoutineTrigger' },
)

/** `secret` is present once: in the answer that created it (create, rotate, a new signing mode). */
export const TriggerWithSecretSchema = Type.Object({ trigger: RoutineTriggerSchema, secret: Type.Optional(Type.String()) })

export const PublicFireParams = Type.Object({ publicId: Type.String({ maxLength: 200 }) })
export const PublicFireResponse = Type.Object({
  run: Type.Object({ id: Uuid, status: Type.String(), issueId: Nullable(Uuid), linkedRunId: Nullable(Uuid), createdAt: Timestamp }),
})

const fireUrl = (publicId: string): string => `/api/routine-triggers/public/${publicId}/fire`

export const presentTrigger = (t: RoutineTrigger): Static<typeof RoutineTriggerSchema> => ({
  id: t.id,
  routineId: t.routineId,
  kind: t.kind,
  label: t.label,
  enabled: t.enabled,
  cronExpression: t.cronExpression,
  timezone: t.timezone,
  nextFireAt: isoOrNull(t.nextFireAt),
  signingMode: t.signingMode,
  replayWindowSec: t.replayWindowSec,
  publicId: t.publicId,
  fireUrl: t.publicId ? fireUrl(t.publicId) : null,
  secretRotatedAt: isoOrNull(t.secretRotatedAt),
  lastFiredAt: isoOrNull(t.lastFiredAt),
  createdAt: iso(t.createdAt),
  updatedAt: iso(t.updatedAt),
})

export const presentTriggerWithSecret = (x: { trigger: RoutineTrigger; secret: string | null }) => ({ trigger: presentTrigger(x.trigger), ...(x.secret ? { secret: x.secret } : {}) })
