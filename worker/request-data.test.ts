import type { Event } from "@sentry/core";
import { describe, expect, it } from "vitest";

import { scrubRequestData } from "./request-data";

const SECRETS = ["Basic c2VjcmV0OnBhc3N3b3Jk", "api-key-value", "session-cookie", "bearer-value", "query-token", "proxy-pass"];

describe("scrubRequestData", () => {
  it("keeps only allowed request headers, and no cookie or body", () => {
    const event: Event = {
      request: {
        headers: {
          Authorization: SECRETS[0]!,
          "x-api-key": SECRETS[1]!,
          cookie: `sid=${SECRETS[2]}`,
          "x-auth-token": SECRETS[3]!,
          "proxy-authorization": SECRETS[5]!,
          "x-custom-secret": "s",
          "cf-connecting-ip": "203.0.113.9",
          "user-agent": "Mozilla/5.0",
          accept: "text/html",
          referer: `https://app.example.com/page?token=${SECRETS[4]}&page=2`,
        },
        cookies: { sid: SECRETS[2]! },
        data: "password=hunter2",
      },
    };
    const scrubbed = scrubRequestData(event);
    expect(scrubbed.request).toEqual({
      headers: {
        "user-agent": "Mozilla/5.0",
        accept: "text/html",
        referer: "https://app.example.com/page?token=[Filtered]&page=2",
      },
    });
  });

  it("replaces secret-looking query values in the URL, the query string, span data and breadcrumbs", () => {
    const event: Event = {
      request: { url: `https://app.example.com/?access_token=${SECRETS[4]}&q=shoes#top`, query_string: `apiKey=${SECRETS[1]}&q=shoes` },
      contexts: {
        trace: {
          trace_id: "0".repeat(32),
          span_id: "0".repeat(16),
          data: {
            "url.full": `https://app.example.com/?auth=${SECRETS[4]}`,
            "url.query": `?Password=${SECRETS[4]}`,
            "http.request.header.authorization": "[Filtered]",
            "http.request.header.x_api_key": SECRETS[1],
            "http.request.header.cookie.sid": SECRETS[2],
            "http.request.header.user_agent": "Mozilla/5.0",
          },
        },
      },
      spans: [
        {
          span_id: "1".repeat(16),
          trace_id: "0".repeat(32),
          start_timestamp: 0,
          data: { "http.url": `https://api.example.com/x?sig=${SECRETS[3]}` },
        },
      ],
      breadcrumbs: [{ category: "fetch", data: { url: `https://api.example.com/y?session=${SECRETS[2]}` } }],
    };
    const scrubbed = JSON.stringify(scrubRequestData(event));
    for (const secret of SECRETS) expect(scrubbed).not.toContain(secret);
    expect(event.request!.url).toBe("https://app.example.com/?access_token=[Filtered]&q=shoes#top");
    expect(event.request!.query_string).toBe("apiKey=[Filtered]&q=shoes");
    expect(event.contexts!.trace!.data).toEqual({
      "url.full": "https://app.example.com/?auth=[Filtered]",
      "url.query": "?Password=[Filtered]",
      "http.request.header.user_agent": "Mozilla/5.0",
    });
  });
});
