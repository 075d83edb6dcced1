/// <reference lib="dom" />
/**
 * The page's side of the worker protocol: numbered requests, events while
 * they run, one final reply each.
 *
 * @module
 */

import type { Reply, Request } from "./_protocol.ts";

type Body<R> = R extends { id: number } ? Omit<R, "id"> : never;

/** Reply kinds that end a request. */
const FINAL = new Set<Reply["kind"]>([
  "error",
  "opened",
  "tensor",
  "preview",
  "converted",
  "loaded",
  "generated",
  "template",
]);

/** A request in flight. */
export interface Pending {
  /** Its id (to abort it). */
  id: number;
  /** Settles with the final reply; rejects with the worker's error text. */
  done: Promise<Reply>;
}

/** Talks to the page's worker. */
export class Client {
  readonly #worker: Worker;
  #next = 1;
  readonly #events = new Map<number, (r: Reply) => void>();
  readonly #finals = new Map<
    number,
    { resolve: (r: Reply) => void; reject: (e: Error) => void }
  >();
  /** Settles with the kernel description once the worker has started. */
  readonly ready: Promise<string>;

  /**
   * Starts the worker.
   *
   * @param url The worker script.
   */
  constructor(url: URL) {
    this.#worker = new Worker(url, { type: "module", name: "modelhost" });
    let ready!: (k: string) => void;
    let failed!: (e: Error) => void;
    this.ready = new Promise((res, rej) => {
      ready = res;
      failed = rej;
    });
    this.#worker.onerror = (e) => {
      failed(new Error(`The worker failed to start: ${e.message}`));
    };
    this.#worker.onmessage = (e: MessageEvent<Reply>) => {
      const r = e.data;
      if (r.kind === "ready") return ready(r.kernels);
      if (FINAL.has(r.kind)) {
        const f = this.#finals.get(r.id);
        this.#finals.delete(r.id);
        this.#events.delete(r.id);
        if (!f) return;
        if (r.kind === "error") f.reject(new Error(r.error));
        else f.resolve(r);
      } else this.#events.get(r.id)?.(r);
    };
  }

  /**
   * Sends a request.
   *
   * @param body The request without its id.
   * @param onEvent Receives progress, rows and tokens while it runs.
   * @returns The id and the final reply.
   */
  send(body: Body<Request>, onEvent?: (r: Reply) => void): Pending {
    const id = this.#next++;
    if (onEvent) this.#events.set(id, onEvent);
    const done = new Promise<Reply>((resolve, reject) => {
      this.#finals.set(id, { resolve, reject });
    });
    this.#worker.postMessage({ ...body, id } as Request);
    return { id, done };
  }

  /**
   * Asks the worker to stop a running request (preview or generation).
   *
   * @param target The request's id.
   */
  abort(target: number): void {
    this.#worker.postMessage({ id: this.#next++, op: "abort", target });
  }
}
