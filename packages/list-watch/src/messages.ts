import type { BlockLine, WatchLine } from "./watch.ts";

/** One report to the operator's Sentry: a rule that blocks the site's monitoring, and what to do. */
export interface WatchMessage {
  message: string;
  /** The rule and its list: one issue per rule, however often the check finds it again. */
  fingerprint: string[];
  tags: Record<string, string>;
}

/**
 * One message per rule that blocks something in `line`, naming the paths it blocks, the list, the
 * rule and the list's version, and what to do. None unless the run says `blocked`.
 */
export function watchMessages(line: WatchLine): WatchMessage[] {
  if (line.status !== "blocked") return [];
  const byRule = new Map<string, BlockLine[]>();
  for (const block of line.blocks) {
    const key = `${block.list}\n${block.rule}`;
    byRule.set(key, [...(byRule.get(key) ?? []), block]);
  }
  return [...byRule.values()].map((blocks) => {
    const [first] = blocks as [BlockLine, ...BlockLine[]];
    const what = blocks.map((block) => `${block.what} (${block.path})`).join(", ");
    const browsers = [...new Set(blocks.flatMap((block) => block.browsers))].join(" and ");
    const remedies = [...new Set(blocks.map((block) => block.remedy))].join("; and ");
    return {
      message:
        `An ad-block list now blocks this site's monitoring: ${first.list} (version ${first.version}) has the rule ${first.rule}, ` +
        `which blocks ${what} on ${line.host} for uBlock Origin on ${browsers}. Visitors who use that list report nothing from then on. ` +
        `To do: ${remedies}.`,
      fingerprint: ["tunnel-watch", first.list, first.rule],
      tags: { "tunnel.watch.list": first.list.slice(0, 200), "tunnel.watch.path": first.path.slice(0, 200) },
    };
  });
}
