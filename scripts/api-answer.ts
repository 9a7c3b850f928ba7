// What the operator's commands (`npm run health`, `npm run monitors`) read from an API and print:
// an answer is the far end's text, and a broken or hostile one may echo the request's token, hold
// a terminal's escape sequences (a window title, the clipboard, a cleared screen) or never end.

/** Bytes of an answer read at most: the largest real one (a day of health data) is some kilobytes. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** The answer's body as text, read no further than {@link MAX_ANSWER_BYTES}: past it, the rest is cancelled, never read, and this throws. */
export async function boundedText(response: Response): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    bytes += value.byteLength;
    if (bytes > MAX_ANSWER_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw new Error(`its answer is over ${MAX_ANSWER_BYTES} bytes, and was not read further`);
    }
    text += decoder.decode(value, { stream: true });
  }
}

/**
 * C0 and C1 control characters but the newline and tab, and the bidirectional overrides: what a
 * terminal reads as a command, or shows in an order other than the text's.
 */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Real tokens are some 40 characters; a shorter "secret" would be redacted out of ordinary words. */
const MIN_SECRET_LENGTH = 8;

/** `text` safe to print: each of `secrets` (a token) redacted wherever it appears, and no control character. */
export function printable(text: string, secrets: readonly string[]): string {
  const redacted = secrets.filter((secret) => secret.length >= MIN_SECRET_LENGTH).reduce((said, secret) => said.replaceAll(secret, "[redacted]"), text);
  return redacted.replace(CONTROL, "");
}

/** {@link printable} `text` in one line of at most `maxLength` characters, as an error message quotes it. */
export function printableLine(text: string, secrets: readonly string[], maxLength = 300): string {
  return printable(text, secrets).replace(/\s+/g, " ").slice(0, maxLength);
}
