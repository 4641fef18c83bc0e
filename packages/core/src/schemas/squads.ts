import { Type } from '@sinclair/typebox'
import { SquadRecord, type Squad } from '../records.js'
import { Nullable, Timestamp, Uuid, iso } from './common.js'

export const SquadSchema = Type.Object(SquadRecord.properties, { $id: 'Squad', title: 'Squad' })

export const SquadListItem = Type.Object({ id: Uuid, name: Type.String(), slug: Type.String(), status: Type.String(), createdAt: Timestamp }, { $id: 'SquadSummary', title: 'SquadSummary' })

export const CreateSquadBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    slug: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  },
  { additionalProperties: false },
)

export const UpdateSquadBody = Type.Object({ name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) }, { additionalProperties: false })

const OrgNode = Type.Recursive(
  (Self) =>
    Type.Object({
      id: Uuid,
      name: Type.String(),
      role: Type.String(),
      title: Nullable(Type.String()),
      status: Type.String(),
      reports: Type.Array(Self),
    }),
  { $id: 'OrgNode' },
)
export const OrgChart = Type.Object({ squadId: Uuid, roots: Type.Array(OrgNode) })

export const presentSquad = (s: Squad) => ({ ...s, createdAt: iso(s.createdAt), updatedAt: iso(s.updatedAt) })
