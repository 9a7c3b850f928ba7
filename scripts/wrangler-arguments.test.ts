import { describe, expect, it } from "vitest";

import { optionOf, passedVars } from "./wrangler-arguments.ts";

describe("wrangler deploy's arguments, read as wrangler reads them", () => {
  it("takes every value of one --var, and one of --var=", () => {
    expect(passedVars(["--var", "A:1", "B:https://k@host/2", "--env", "staging", "--var=C:x:y", "D:4"])).toEqual({ A: "1", B: "https://k@host/2", C: "x:y" });
  });

  it("reads an option spelt either way, the last one winning", () => {
    expect(optionOf(["--env", "staging", "-e=production"], ["--env", "-e"])).toBe("production");
    expect(optionOf(["--config=other.toml"], ["--config", "-c"])).toBe("other.toml");
    expect(optionOf(["--dry-run"], ["--env", "-e"])).toBeUndefined();
  });
});
