import { tunnelAnswer, type Answer, type TunnelAnswerCode } from "./answers.ts";
import { contentEncodingOf, isUnrecognisedCoding, type ContentEncoding } from "../request/content-encoding.ts";
import { checkEnvelopeDsn, type DsnAllowList } from "../upstream/allow-list.ts";
import { readEnvelopeHead, type EnvelopeHead, type HeadResult, type ScanCompressed } from "../envelope/head.ts";
import type { TunnelQuery } from "../request/query.ts";
import { wholeBody, type BodyChunk } from "../shared/body.ts";
import { earlyEnd, type Deadline, type EarlyEnd } from "../shared/deadline.ts";
import type { ReadRest } from "../spool/in-hand.ts";

/** An envelope whose header line passed every check, and what its delivery needs. */
export interface ReceivedEnvelope {
  /** The request's body, its head already read into `head.consumed`. */
  body: ReadableStream<BodyChunk>;
  head: EnvelopeHead;
  /**
   * The allowed DSN it names, in canonical form: Sentry's limits, client reports and the spool key
   * on it, so that a spelling with a legacy secret counts, and is delivered later, as the DSN it is.
   */
  dsn: string;
  encoding: ContentEncoding;
  contentLength: number | undefined;
  upstreamUrl: string;
  /** Gives back the memory kept in hand that a large body read whole took: called once the request is answered. */
  release: (() => void) | undefined;
}

type Reception =
  | { ok: true; envelope: ReceivedEnvelope; query: TunnelQuery; bytes: number }
  | { ok: false; answer: Answer; bytes: number | null };

/** Failures of reading a body that are the client's going away, whatever the body held. */
const CLIENT_FAULTS: ReadonlySet<string> = new Set(["body_timeout", "body_incomplete"]);

/**
 * Bodies up to this size (most events) are read whole before the header is looked at. With a
 * spool, so is a larger one that fits the memory it keeps in hand, its length declared or not.
 */
export const SMALL_BODY_BYTES = 64 * 1024;

/** What receiving needs of the tunnel's parts. */
interface ReceiveParts {
  maxEnvelopeBytes: number;
  allowList: DsnAllowList;
  inflate: ScanCompressed | undefined;
  /** With a spool: reads the rest of a large body whole, in the memory it keeps in hand (`readInHand`). */
  readRest: ReadRest | undefined;
}

/**
 * The second stage: the body's declared length and coding, then its header line, read within the
 * deadline and no further, and the DSN it names. The query the envelope passed by is replaced by
 * the DSN's project, which is where it goes.
 */
export async function receiveEnvelope(request: Request, deadline: Deadline, { maxEnvelopeBytes, allowList, inflate, readRest }: ReceiveParts): Promise<Reception> {
  const declaredLength = request.headers.get("content-length") ?? "";
  const contentLength = /^\d{1,15}$/.test(declaredLength) ? Number(declaredLength) : undefined;
  if (contentLength !== undefined && contentLength > maxEnvelopeBytes) return { ok: false, answer: tunnelAnswer("envelope_too_large"), bytes: contentLength };
  const small = contentLength !== undefined && contentLength <= SMALL_BODY_BYTES;
  const refused = (code: TunnelAnswerCode, bytes = contentLength ?? null): Reception => ({ ok: false, answer: tunnelAnswer(code), bytes });
  // A coding that is no coding is read as none, as Relay does, if the header line then reads.
  const declared = contentEncodingOf(request.headers);
  const assumedIdentity = declared === undefined && isUnrecognisedCoding(request.headers);
  const encoding = declared ?? (assumedIdentity ? "identity" : undefined);
  if (!encoding) return refused("unsupported_encoding");
  if (!request.body || contentLength === 0) return refused("empty_envelope");

  const read = await readHead(request, request.body, small, { encoding, inflate }, deadline);
  if (!read.ok) return refused(assumedIdentity && !CLIENT_FAULTS.has(read.reason) ? "unsupported_encoding" : read.reason);
  let { head } = read;
  if (head.consumedBytes > maxEnvelopeBytes) return refused("envelope_too_large", head.consumedBytes);

  const verdict = checkEnvelopeDsn(head.dsn, allowList);
  if (!verdict.ok) return refused(verdict.reason, head.consumedBytes);
  // With a spool, a larger body is held whole too, as its bytes come: it goes to Sentry in one
  // native call, and is stored whole if Sentry fails under it (decisions 041, 043, 047).
  let release: (() => void) | undefined;
  if (readRest && !small && !head.ended) {
    try {
      const held = await readRest(request.body, head.consumedBytes, contentLength, maxEnvelopeBytes, (work) => deadline.race(work));
      if (held) {
        const consumedBytes = held.chunks.reduce((total, chunk) => total + chunk.byteLength, head.consumedBytes);
        // A body of unknown length is held to the maximum as it comes, as a streamed one is.
        if (consumedBytes > maxEnvelopeBytes) {
          held.release();
          return refused("envelope_too_large", consumedBytes);
        }
        release = held.release;
        head = { ...head, consumed: [...head.consumed, ...held.chunks], consumedBytes, ended: held.whole };
      }
    } catch {
      return refused(earlyEnd("receiving", deadline), head.consumedBytes);
    }
  }
  const { dsn, upstreamUrl } = verdict.allowed;
  const envelope = { body: request.body, head, dsn, encoding, contentLength, upstreamUrl, release };
  return { ok: true, envelope, query: verdict.allowed.query, bytes: head.consumedBytes };
}

type HeadRead = HeadResult | { ok: false; reason: EarlyEnd };

/**
 * Reads the body as far as the envelope's header line, within the deadline, or `whole`. workerd
 * hands a body over in 4 KiB chunks, so even a 10 KB event would need several reads; a small body
 * is cheaper taken whole, in one native call.
 */
async function readHead(
  request: Request,
  body: ReadableStream<BodyChunk>,
  whole: boolean,
  { encoding, inflate }: { encoding: ContentEncoding; inflate: ScanCompressed | undefined },
  deadline: Deadline,
): Promise<HeadRead> {
  const failed = (): HeadRead => ({ ok: false, reason: earlyEnd("receiving", deadline) });
  if (whole) {
    let bytes: BodyChunk;
    try {
      bytes = new Uint8Array(await deadline.race(request.arrayBuffer()));
    } catch {
      return failed();
    }
    return readEnvelopeHead(wholeBody(bytes), encoding, inflate);
  }
  const reader = body.getReader();
  try {
    const head = await deadline.race(readEnvelopeHead(reader, encoding, inflate));
    reader.releaseLock();
    return head;
  } catch {
    reader.cancel().catch(() => {});
    return failed();
  }
}
