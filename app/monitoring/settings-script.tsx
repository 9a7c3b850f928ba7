import type { BrowserMonitoringSettings } from "./browser-options";

const SCRIPT_ID = "monitoring-settings";

/**
 * The browser SDK's settings, written into the page by the server. A JSON script rather than
 * loader data: the SDK may start at the first error, before hydration has read loader data.
 */
export function MonitoringSettingsScript({ settings, nonce }: { settings: BrowserMonitoringSettings | null | undefined; nonce: string | undefined }) {
  if (!settings) return null;
  // `<` escaped, so no value can close the script element.
  const json = JSON.stringify(settings).replace(/</g, "\\u003c");
  // A data block runs nothing, but carries the nonce so that every script element of the page does.
  // The browser hides a nonce once the page has loaded, so hydration finds none: as Remix's own
  // scripts do, the mismatch is expected.
  return <script id={SCRIPT_ID} type="application/json" nonce={nonce} suppressHydrationWarning dangerouslySetInnerHTML={{ __html: json }} />;
}

export function readMonitoringSettings(): BrowserMonitoringSettings | undefined {
  const text = document.getElementById(SCRIPT_ID)?.textContent;
  return text ? (JSON.parse(text) as BrowserMonitoringSettings) : undefined;
}
