/**
 * Domain records as services see them: camelCase, dates as `Date`, money in integer cents.
 * Storage implementations return exactly these shapes. Each record is defined once, as a TypeBox
 * schema in records/ (docs/records.md): its type, the API's response schema and the storage table
 * are derived from it.
 */
export * from './records/squads.js'
export * from './records/issues.js'
export * from './records/activity.js'
export * from './records/jobs.js'
export * from './records/goals.js'
export * from './records/runs.js'
