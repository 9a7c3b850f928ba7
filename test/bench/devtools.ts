/** A minimal Chrome DevTools Protocol client: one request at a time, answers matched by id. */
export async function devtools(url: string) {
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve, { once: true });
    socket.addEventListener("error", reject, { once: true });
  });
  let lastId = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  socket.addEventListener("message", (message) => {
    const data = JSON.parse(String(message.data)) as { id?: number; result?: unknown };
    if (data.id !== undefined) waiting.get(data.id)?.(data.result);
  });
  return {
    send<T>(method: string, params: object = {}): Promise<T> {
      const id = ++lastId;
      socket.send(JSON.stringify({ id, method, params }));
      return new Promise<T>((resolve) => waiting.set(id, (result) => resolve(result as T)));
    },
    close: () => socket.close(),
  };
}

/** The inspector of the app's own isolate in workerd (not the asset router's), on `inspectorPort`. */
export async function userWorkerInspector(inspectorPort: number): Promise<Awaited<ReturnType<typeof devtools>>> {
  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as { title: string; webSocketDebuggerUrl: string }[];
  const app = targets.find((target) => target.title.includes("core:user"));
  if (!app) throw new Error(`no user Worker among ${targets.map((target) => target.title).join(", ")}`);
  return devtools(app.webSocketDebuggerUrl);
}
