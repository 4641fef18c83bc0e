import { SlawError, type ErrorDetail } from '../../errors.js'
import type { RoutineVariable, RoutineVariableType } from '../../contracts/routines.js'

export type VariableValue = string | number | boolean
const variableNamePattern = /^[A-Za-z][A-Za-z0-9_]*$/
const maxVariables = 50
/** A routine's title, before and after substituting its variables. */
export const maxRoutineTitle = 200
/** A `text` value is one line (it usually lands in a title); `textarea` may hold a body. */
const maxTextLength = 1_000
const maxTextareaLength = 100_000

/** A variable definition as a request writes it: everything but `name` optional. */
export interface VariableInput {
  name: string
  label?: string | null
  type?: RoutineVariableType
  defaultValue?: VariableValue | null
  required?: boolean
  options?: string[] | null
}

/**
 * Checks definitions by the rules of docs/routines.md (name pattern, unique names, `options` required for
 * and allowed only on `select`, a default of the variable's type) and fills the defaults.
 * Every problem is reported at once, each with its path.
 */
export function normaliseVariables(input: VariableInput[], path = '/variables'): RoutineVariable[] {
  const details: ErrorDetail[] = []
  const seen = new Set<string>()
  const out: RoutineVariable[] = []
  if (input.length > maxVariables) details.push({ path, message: `at most ${maxVariables} variables` })
  input.forEach((v, i) => {
    const at = `${path}/${i}`
    const type = v.type ?? 'text'
    if (!variableNamePattern.test(v.name)) details.push({ path: `${at}/name`, message: 'must match [A-Za-z][A-Za-z0-9_]*' })
    if (seen.has(v.name)) details.push({ path: `${at}/name`, message: `variable "${v.name}" is defined twice` })
    seen.add(v.name)
    let options: string[] | null = null
    if (type === 'select') {
      if (!v.options || v.options.length === 0) details.push({ path: `${at}/options`, message: 'a select variable needs at least one option' })
      else if (new Set(v.options).size !== v.options.length) details.push({ path: `${at}/options`, message: 'options must be distinct' })
      else options = [...v.options]
    } else if (v.options !== undefined && v.options !== null) {
      details.push({ path: `${at}/options`, message: 'options are allowed only for select variables' })
    }
    const def = v.defaultValue ?? null
    if (def !== null) {
      const problem = valueProblem({ name: v.name, type, options }, def)
      if (problem) details.push({ path: `${at}/defaultValue`, message: problem })
    }
    out.push({ name: v.name, label: v.label ?? null, type, defaultValue: def, required: v.required ?? true, options })
  })
  if (details.length) throw new SlawError('invalid_payload', `Invalid variables: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`, details)
  return out
}

function valueProblem(def: Pick<RoutineVariable, 'name' | 'type' | 'options'>, value: unknown): string | undefined {
  switch (def.type) {
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'must be a number'
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be a boolean'
    case 'select':
      if (typeof value !== 'string') return 'must be a string'
      return def.options?.includes(value) ? undefined : `must be one of: ${def.options?.join(', ')}`
    case 'text':
      if (typeof value !== 'string') return 'must be a string'
      if (/[\r\n]/.test(value)) return 'must be a single line (use a textarea variable for text with line breaks)'
      return value.length <= maxTextLength ? undefined : `must be at most ${maxTextLength} characters`
    case 'textarea':
      if (typeof value !== 'string') return 'must be a string'
      return value.length <= maxTextareaLength ? undefined : `must be at most ${maxTextareaLength} characters`
  }
}

/**
 * The values of one run: each variable takes, in order of precedence, the run request's
 * `variables`, then the top-level field of the same name in the payload (a webhook body), then
 * its default. Unknown names in `variables` are refused (a typo must not pass silently); extra
 * payload fields are ignored. Missing required variables and wrong types are refused.
 */
export function resolveVariables(defs: RoutineVariable[], given: Record<string, unknown> | undefined, payload: Record<string, unknown> | undefined): Record<string, VariableValue> {
  const details: ErrorDetail[] = []
  const known = new Set(defs.map((d) => d.name))
  for (const name of Object.keys(given ?? {})) if (!known.has(name)) details.push({ path: `/variables/${name}`, message: 'is not a variable of this routine' })
  const out: Record<string, VariableValue> = {}
  for (const def of defs) {
    let value: unknown
    let from = `/variables/${def.name}`
    if (given && given[def.name] !== undefined && given[def.name] !== null) value = given[def.name]
    else if (payload && payload[def.name] !== undefined && payload[def.name] !== null) {
      value = payload[def.name]
      from = `/payload/${def.name}`
    } else if (def.defaultValue !== null) value = def.defaultValue
    if (value === undefined) {
      if (def.required) details.push({ path: from, message: 'is required' })
      continue
    }
    const problem = valueProblem(def, value)
    if (problem) details.push({ path: from, message: problem })
    else out[def.name] = value as VariableValue
  }
  if (details.length) throw new SlawError('invalid_payload', `Invalid variables: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`, details)
  return out
}

const placeholder = /\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*\}\}/g

/**
 * Replaces `{{name}}` (spaces inside the braces allowed) with the variable's value. An optional
 * variable without a value becomes the empty string; a name that is no variable of the routine
 * stays as written, so a template can show literal braces.
 */
export function renderTemplate(template: string, defs: RoutineVariable[], values: Record<string, VariableValue>): string {
  const known = new Set(defs.map((d) => d.name))
  return template.replace(placeholder, (whole, name: string) => {
    if (!known.has(name)) return whole
    const v = values[name]
    return v === undefined ? '' : String(v)
  })
}
