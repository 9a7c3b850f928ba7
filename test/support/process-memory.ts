import { readdirSync, readFileSync } from "node:fs";

/** workerd processes started by this process (Miniflare spawns them as its children). */
export function workerdChildren(): Set<number> {
  const children = new Set<number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces, so read from its ")".
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (comm === "workerd" && ppid === process.pid) children.add(Number(entry));
    } catch {
      // The process ended while the list was read.
    }
  }
  return children;
}

/** The process's peak resident set since it started (`VmHWM`), in bytes. */
export function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = /^VmHWM:\s+(\d+) kB$/m.exec(status);
  if (!kib) throw new Error(`no VmHWM for process ${pid}`);
  return Number(kib[1]) * 1024;
}
