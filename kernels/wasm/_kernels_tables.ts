/**
 * Constant tables the kernels read from kernel memory: the engine writes
 * {@link kernelTableBytes} once at {@link TABLES_AT} when it creates the
 * memory (inside the reserved first 64 KiB, above the pool's control
 * slots), so the kernels address a table entry with the table's offset as
 * the load's constant offset and no pointer argument.
 *
 * - `IQ3S_GRID`: ggml's `iq3s_grid`, 512 entries of 4 magnitudes (bytes).
 * - `IQ2XS_GRID`: ggml's `iq2xs_grid`, 512 entries of 8 magnitudes.
 * - `SIGN_MASKS`: for each byte value, 8 bytes of 0xFF where its bit is
 *   set, else 0 (IQ3_S stores its signs as plain bits).
 * - `KSIGN_MASKS`: the same masks of ggml's `ksigns_iq2xs[i]` for the 128
 *   7-bit sign codes of IQ2_XS (the eighth sign is the parity).
 *
 * @module
 */

import { IQ2XS_GRID, IQ3S_GRID, KSIGNS } from "../../core/quants/_iq_tables.ts";

/** Address of the first table in kernel memory. */
export const TABLES_AT = 49152;

/** Offsets (absolute addresses) of the tables. */
export const TABLE = {
  IQ3S_GRID: TABLES_AT,
  IQ2XS_GRID: TABLES_AT + 2048,
  SIGN_MASKS: TABLES_AT + 6144,
  KSIGN_MASKS: TABLES_AT + 8192,
} as const;

/** Bytes of all tables together (from {@link TABLES_AT}). */
export const TABLES_BYTES = 9216;

/** The tables' bytes, to be written at {@link TABLES_AT}. */
export function kernelTableBytes(): Uint8Array {
  const out = new Uint8Array(TABLES_BYTES);
  const at = (name: keyof typeof TABLE) => TABLE[name] - TABLES_AT;
  out.set(new Uint8Array(IQ3S_GRID.buffer, IQ3S_GRID.byteOffset, 2048), 0);
  out.set(
    new Uint8Array(IQ2XS_GRID.buffer, IQ2XS_GRID.byteOffset, 4096),
    at("IQ2XS_GRID"),
  );
  const mask = (bits: number, o: number) => {
    for (let j = 0; j < 8; j++) out[o + j] = (bits >> j) & 1 ? 0xff : 0;
  };
  for (let s = 0; s < 256; s++) mask(s, at("SIGN_MASKS") + 8 * s);
  for (let s = 0; s < 128; s++) mask(KSIGNS[s], at("KSIGN_MASKS") + 8 * s);
  return out;
}
