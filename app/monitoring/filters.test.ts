import { stringMatchesSomePattern, type Event } from "@sentry/core";
import { describe, expect, it } from "vitest";

import {
  dropNotFoundTransactions,
  dropThrownRedirects,
  EXTENSION_URLS,
  isNotFoundTransaction,
  isThrownRedirect,
  NOISY_BROWSER_ERRORS,
} from "./filters";

const ignoreErrors = NOISY_BROWSER_ERRORS.map(({ pattern }) => pattern);

describe("NOISY_BROWSER_ERRORS", () => {
  it.each([
    "ResizeObserver loop limit exceeded",
    "ResizeObserver loop completed with undelivered notifications.",
    "Script error.",
    "Script error",
    "Non-Error promise rejection captured with value: undefined",
    "TypeError: Failed to fetch",
    "Failed to fetch",
    "TypeError: Load failed",
    "TypeError: NetworkError when attempting to fetch resource.",
    "AbortError: signal is aborted without reason",
    "AbortError: The user aborted a request.",
  ])("ignores %j", (message) => {
    expect(stringMatchesSomePattern(message, ignoreErrors)).toBe(true);
  });

  it.each([
    "Error: Self-test: an error thrown in the browser",
    "TypeError: Cannot read properties of undefined (reading 'map')",
    "TypeError: Failed to fetch user profile from cache",
    "Error: Script error in the checkout widget",
    "RangeError: Maximum call stack size exceeded",
  ])("reports %j", (message) => {
    expect(stringMatchesSomePattern(message, ignoreErrors)).toBe(false);
  });

});

describe("EXTENSION_URLS", () => {
  it.each([
    ["chrome-extension://abcdef/content.js", true],
    ["moz-extension://1234/script.js", true],
    ["safari-extension://com.example/inject.js", true],
    ["safari-web-extension://ABC/inject.js", true],
    ["https://app.example.com/build/root-ABC.js", false],
    ["https://evil.example/chrome-extension://x.js", false],
  ])("%s is an extension frame: %s", (url, expected) => {
    expect(stringMatchesSomePattern(url, [...EXTENSION_URLS])).toBe(expected);
  });
});

describe("thrown redirects", () => {
  const event: Event = { message: "x" };

  it.each([
    ["a redirect() Response", new Response(null, { status: 302, headers: { location: "/x" } }), true],
    ["a 301 route error response", { status: 301, statusText: "Moved", data: null, internal: false }, true],
    ["a 404 Response", new Response(null, { status: 404 }), false],
    ["a 500 Response", new Response(null, { status: 500 }), false],
    ["an Error", new Error("boom"), false],
    ["a string", "302", false],
    ["nothing", undefined, false],
  ])("%s is a thrown redirect: %s", (_name, thrown, expected) => {
    expect(isThrownRedirect({ originalException: thrown })).toBe(expected);
    expect(dropThrownRedirects(event, { originalException: thrown })).toBe(expected ? null : event);
  });
});

describe("not-found transactions", () => {
  const transaction = (name: string, trace: { op?: string; status?: string; data?: Record<string, unknown> }): Event => ({
    type: "transaction",
    transaction: name,
    contexts: { trace: { trace_id: "a".repeat(32), span_id: "b".repeat(16), ...trace } },
  });

  it.each([
    ["the server's 404", transaction("GET /nope", { data: { "http.response.status_code": 404 }, status: "not_found" })],
    ["a span marked not_found", transaction("GET /gone", { status: "not_found" })],
    ["the browser's pageload of the catch-all route", transaction("routes/$", { op: "pageload" })],
    ["a navigation to the catch-all route", transaction("routes/$", { op: "navigation" })],
  ])("drops %s", (_name, event) => {
    expect(isNotFoundTransaction(event)).toBe(true);
    expect(dropNotFoundTransactions(event)).toBeNull();
  });

  it.each([
    ["a normal page", transaction("routes/_index", { op: "pageload" })],
    ["a server error", transaction("GET /sentry-example-page", { data: { "http.response.status_code": 500 }, status: "internal_error" })],
    ["a 403", transaction("POST /x", { data: { "http.response.status_code": 403 }, status: "permission_denied" })],
  ])("keeps %s", (_name, event) => {
    expect(dropNotFoundTransactions(event)).toBe(event);
  });
});
