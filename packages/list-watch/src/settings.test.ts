import { configRefusal } from "@edge-monitoring/tunnel/testing";
import { describe, expect, it } from "vitest";

import { DEFAULT_WATCH_LISTS, MAX_WATCH_LISTS, readWatchSettings } from "./settings.ts";

describe("readWatchSettings: TUNNEL_WATCH, TUNNEL_WATCH_HOST and TUNNEL_WATCH_LISTS", () => {
  it("is off unless TUNNEL_WATCH says on, whatever else is set", () => {
    expect(readWatchSettings({})).toBeUndefined();
    expect(readWatchSettings({ TUNNEL_WATCH: "off", TUNNEL_WATCH_HOST: "example.com" })).toBeUndefined();
  });

  it("watches uBlock Origin's default lists for the host, lower-cased", () => {
    expect(readWatchSettings({ TUNNEL_WATCH: "on", TUNNEL_WATCH_HOST: "App.Example.com" })).toEqual({ host: "app.example.com", lists: DEFAULT_WATCH_LISTS });
    expect(DEFAULT_WATCH_LISTS.every((url) => url.startsWith("https://ublockorigin.github.io/uAssets/"))).toBe(true);
  });

  it("takes https lists, and http ones on loopback only", () => {
    const lists = "https://lists.example.org/a.txt, http://127.0.0.1:8799/b.txt,http://localhost/c.txt";
    expect(readWatchSettings({ TUNNEL_WATCH: "on", TUNNEL_WATCH_HOST: "example.com", TUNNEL_WATCH_LISTS: lists })?.lists).toEqual([
      "https://lists.example.org/a.txt",
      "http://127.0.0.1:8799/b.txt",
      "http://localhost/c.txt",
    ]);
  });

  it.each([
    [{ TUNNEL_WATCH: "yes" }, "TUNNEL_WATCH"],
    [{ TUNNEL_WATCH: "on" }, "TUNNEL_WATCH_HOST"],
    [{ TUNNEL_WATCH: "on", TUNNEL_WATCH_HOST: "https://example.com" }, "TUNNEL_WATCH_HOST"],
    [{ TUNNEL_WATCH: "on", TUNNEL_WATCH_HOST: "example.com:8443" }, "TUNNEL_WATCH_HOST"],
    [{ TUNNEL_WATCH: "on", TUNNEL_WATCH_HOST: "example.com/path" }, "TUNNEL_WATCH_HOST"],
    [{ TUNNEL_WATCH: "on", TUNNEL_WATCH_HOST: "example.com", TUNNEL_WATCH_LISTS: "http://lists.example.org/a.txt" }, "TUNNEL_WATCH_LISTS"],
    [{ TUNNEL_WATCH: "on", TUNNEL_WATCH_HOST: "example.com", TUNNEL_WATCH_LISTS: "https://user:secret@lists.example.org/a.txt" }, "TUNNEL_WATCH_LISTS"],
    [{ TUNNEL_WATCH: "on", TUNNEL_WATCH_HOST: "example.com", TUNNEL_WATCH_LISTS: "lists.example.org/a.txt" }, "TUNNEL_WATCH_LISTS"],
    [{ TUNNEL_WATCH: "on", TUNNEL_WATCH_HOST: "example.com", TUNNEL_WATCH_LISTS: "https://a.org/x.txt,https://a.org/x.txt" }, "TUNNEL_WATCH_LISTS"],
    [
      { TUNNEL_WATCH: "on", TUNNEL_WATCH_HOST: "example.com", TUNNEL_WATCH_LISTS: Array.from({ length: MAX_WATCH_LISTS + 1 }, (_, index) => `https://a.org/${index}.txt`).join(",") },
      "TUNNEL_WATCH_LISTS",
    ],
  ])("refuses %j, naming %s", (variables, name) => {
    expect(configRefusal(() => readWatchSettings(variables))).toMatchObject({ variable: name });
  });
});
