/**
 * workerd's own streams, which Node has not, for the package's code run in Node by the simulations
 * (`npm run bench:spool`): `FixedLengthStream`, which errors a body that ends short or runs long, as
 * workerd's does, and `IdentityTransformStream`. Their bytes move through script here, not natively:
 * a simulation counts what the code decides, not how fast workerd moves bytes.
 */
class FixedLengthStream extends TransformStream<Uint8Array, Uint8Array> {
  constructor(length: number | bigint) {
    const expected = Number(length);
    let seen = 0;
    super({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > expected) controller.error(new TypeError("more bytes than the declared length"));
        else controller.enqueue(chunk);
      },
      flush(controller) {
        if (seen !== expected) controller.error(new TypeError("fewer bytes than the declared length"));
      },
    });
  }
}

class IdentityTransformStream extends TransformStream<Uint8Array, Uint8Array> {}

/** Installs both on `globalThis`, where the package's code finds them in workerd. */
export function installWorkerdStreams(): void {
  Object.assign(globalThis, { FixedLengthStream, IdentityTransformStream });
}
