/**
 * The helper thread of `sgemmMany` (io/blas.ts): a worker that opens the
 * same BLAS library and runs its share of a list of `cblas_sgemm` calls on
 * matrices in the kernels' shared WebAssembly memory, while the main
 * thread runs the other share. Control words (Int32Array on a shared
 * buffer): [0] job number (the main thread bumps it; −1 stops the helper),
 * [1] the last job done, [2] list byte offset, [3] first call, [4] end
 * call, [5] 1 once the helper is ready, [6] 1 when a call failed here.
 *
 * @module
 */

import { SGEMM_POINTER_SYMBOL, sgemmFromList } from "./_blas_list.ts";

interface Init {
  library: string;
  memory: WebAssembly.Memory;
  ctrl: Int32Array;
}

self.onmessage = (ev: MessageEvent<Init>) => {
  const { library, memory, ctrl } = ev.data;
  const lib = Deno.dlopen(library, { cblas_sgemm: SGEMM_POINTER_SYMBOL });
  Atomics.store(ctrl, 5, 1);
  Atomics.notify(ctrl, 5);
  let seen = Atomics.load(ctrl, 0);
  for (;;) {
    Atomics.wait(ctrl, 0, seen);
    const job = Atomics.load(ctrl, 0);
    if (job < 0) break;
    seen = job;
    try {
      sgemmFromList(
        lib.symbols.cblas_sgemm,
        memory,
        ctrl[2],
        ctrl[3],
        ctrl[4],
      );
    } catch {
      // the main thread runs this half itself and stops using the helper
      Atomics.store(ctrl, 6, 1);
    }
    Atomics.store(ctrl, 1, job);
    Atomics.notify(ctrl, 1);
  }
  lib.close();
  self.close();
};
