/** The part of `@gorhill/ubo-core` (uBlock Origin's static network filtering engine) the project uses; it ships no types. */
declare module "@gorhill/ubo-core" {
  interface StaticNetFilteringEngineInstance {
    useLists(lists: readonly { name: string; raw: string }[]): Promise<void>;
    /** 1 when blocked, 2 when allowed by an exception, 0 when no filter matched. */
    matchRequest(details: { originURL: string; url: string; type: string }): number;
    toLogData(): { raw: string } | undefined;
  }
  export const StaticNetFilteringEngine: { create(): Promise<StaticNetFilteringEngineInstance> };
}
