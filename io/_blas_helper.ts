/**
 * The helper thread of `sgemmMany` (io/blas.ts): a worker that opens the
 * same BLAS library and runs its share of a list of `cblas_sgemm` calls on
 * matrices in the kernels' shared WebAssembly memory, while the main
 * thread runs the rest: both take the next call from a shared counter, so
 * a thread the system deschedules leaves its calls to the other. Control
 * words (Int32Array on a shared buffer): [0] job number (the main thread
 * bumps it; −1 stops the helper), [1] the last job done, [2] list byte
 * offset, [3] the next call to take, [4] calls in the list, [5] 1 once the
 * helper is ready, [6] 1 + the index of a call that failed here (0: none),
 * [7] 1 when the job's list is the address list `addrs` (absolute
 * addresses, see `sgemmFromAddresses`) rather than one in `memory`, 2
 * when `addrs` holds a packed job (`runPackedItems`, io/_blas_packed.ts),
 * [8] the last job whose list may be read (the main thread may wake the
 * helper before it has filled the list, so the wake-up overlaps that).
 *
 * @module
 */

import {
  awaitPacked,
  type CopyAtFn,
  copyAtSymbol,
  kernelSymbol,
  OutputView,
  type PackedKernelFn,
  packSync,
  runPackedItems,
  runPackTasks,
} from "./_blas_packed.ts";
import {
  SGEMM_POINTER_SYMBOL,
  sgemmFromAddresses,
  sgemmFromList,
} from "./_blas_list.ts";

interface Init {
  library: string;
  memory: WebAssembly.Memory | undefined;
  ctrl: Int32Array;
  addrs: Float64Array;
  packed: string | undefined;
  spin: number;
}

self.addEventListener("message", (ev: Event) => {
  const { library, memory, ctrl, addrs, packed, spin } =
    (ev as MessageEvent<Init>).data;
  const lib = Deno.dlopen(library, {
    cblas_sgemm: SGEMM_POINTER_SYMBOL,
    kernel: kernelSymbol(packed ?? "HASWELL"),
    oncopy: copyAtSymbol(`sgemm_oncopy_${packed ?? "HASWELL"}`),
  });
  const oncopy = lib.symbols.oncopy as unknown as CopyAtFn;
  const sync = packSync(addrs);
  Atomics.store(ctrl, 5, 1);
  Atomics.notify(ctrl, 5);
  let seen = Atomics.load(ctrl, 0);
  const output = new OutputView();
  for (;;) {
    // poll for the next job for `spin` ms before sleeping (a wake-up
    // from Atomics.wait took 70-120 µs on the 2-core VM)
    const until = performance.now() + spin;
    while (Atomics.load(ctrl, 0) === seen && performance.now() < until) {
      // spin
    }
    Atomics.wait(ctrl, 0, seen);
    const job = Atomics.load(ctrl, 0);
    if (job < 0) break;
    seen = job;
    // the list is ready once [8] says so: poll up to 0.3 ms (the main
    // thread allocates y and packs x meanwhile), then sleep
    const until2 = performance.now() + 0.3;
    while (Atomics.load(ctrl, 8) !== job && performance.now() < until2) {
      // spin
    }
    for (
      let go = Atomics.load(ctrl, 8);
      go !== job;
      go = Atomics.load(ctrl, 8)
    ) {
      Atomics.wait(ctrl, 8, go);
    }
    let taken = -1;
    try {
      const next = () => (taken = Atomics.add(ctrl, 3, 1));
      if (ctrl[7] === 2) {
        // x's packing tasks first, then the items once every task is
        // done and y's address is set (none after a failed task: the
        // main thread packs x again and runs them)
        const tasks = addrs[17];
        let ok = true;
        if (tasks > 0) {
          try {
            runPackTasks(oncopy, addrs, sync);
          } catch {
            ok = false;
          }
          awaitPacked(sync, tasks + 1);
          if (Atomics.load(sync, 3) !== 0) ok = false;
        }
        if (ok) {
          runPackedItems(
            lib.symbols.kernel as unknown as PackedKernelFn,
            addrs,
            next,
            addrs[14] === 1 || addrs[15] === 1
              ? output.get(addrs[2], addrs[3] * addrs[4])
              : undefined,
          );
        }
      } else if (ctrl[7] === 1 || !memory) {
        sgemmFromAddresses(lib.symbols.cblas_sgemm, addrs, ctrl[4], next);
      } else {
        sgemmFromList(lib.symbols.cblas_sgemm, memory, ctrl[2], ctrl[4], next);
      }
    } catch {
      // the main thread runs this call itself and stops using the helper
      Atomics.store(ctrl, 6, taken + 1);
    }
    Atomics.store(ctrl, 1, job);
    Atomics.notify(ctrl, 1);
  }
  lib.close();
  self.close();
}, { once: true });
