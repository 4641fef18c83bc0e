/**
 * V8 keeps a script's source for as long as the script lives, in one byte per character only when
 * every character is Latin-1: one arrow in a comment made core's 650 kB index twice that in every
 * process's heap (docs/startup-and-memory.md). Any character above U+00FF is written as a \u
 * escape, which reads the same in a comment, a string or a regular expression.
 * @param {string} text
 */
export function escapeBeyondLatin1(text) {
  return text.replace(/[\u0100-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
