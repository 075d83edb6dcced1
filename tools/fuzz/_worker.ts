/**
 * Runs fuzz cases for the harness, one message per case; the harness ends
 * the worker when a case takes too long.
 *
 * @module
 */

import { type FuzzTarget, loadTargets, summarize } from "./harness.ts";

interface Scope {
  onmessage: ((ev: MessageEvent) => void) | null;
  postMessage(message: unknown): void;
}
const scope = self as unknown as Scope;

let targets: Map<string, FuzzTarget> | undefined;
let loaded = "";

scope.onmessage = async (
  ev: MessageEvent<
    { id: number; modules: string[]; target?: string; input?: Uint8Array }
  >,
) => {
  const { id, modules, target, input } = ev.data;
  const key = modules.join("\n");
  if (!targets || loaded !== key) {
    targets = await loadTargets(modules);
    loaded = key;
  }
  if (id === -1) return scope.postMessage({ id });
  try {
    await targets.get(target!)!.run(input!);
    scope.postMessage({ id });
  } catch (e) {
    const s = summarize(e);
    scope.postMessage({ id, error: { ...s, stack: s.stack?.slice(0, 2000) } });
  }
};
