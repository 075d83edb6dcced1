// The model folder behind the server's registry routes: model files in any
// readable format, with versions, scanned on demand and described by
// _model_info.ts (provenance, metadata, architecture). Uploads are streamed to a hidden
// temporary file in the folder, read back with the format plugins, and
// linked into place only when valid, so a bad or interrupted upload leaves
// the folder as it was.
//
// Layouts (one folder, scanned on demand):
//   name@version.ext           a file (ext: any registered format's extension)
//   name.ext                   a file, version "1"
//   name/version/model.ext     a folder per version (any one model file in it,
//                              or a Hugging Face checkpoint: config.json + weights)
//   name/config.json …         a Hugging Face checkpoint folder, version "1"

import { basename, join } from "@std/path";
import { checkNetworkTensors } from "../core/network.ts";
import type { FormatPlugin } from "../core/plugin.ts";
import type { Registry } from "../registry.ts";
import { openModel } from "../io/open.ts";
import { modelBuildProblem } from "./_buildable.ts";
import { HttpError, tooLarge } from "./_http.ts";
import {
  type Candidate,
  describeVersion,
  type ModelVersion,
} from "./_model_info.ts";

/** Model names: letters, digits, `.`, `_`, `-`; no `@` or `/`. */
export const NAME_RE: RegExp = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Version names: the same characters. */
export const VERSION_RE: RegExp = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Orders versions: numerically where they are numbers, else by text. */
export function compareVersions(a: string, b: string): number {
  return a.localeCompare(b, "en", { numeric: true });
}

async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isFile) total += (await Deno.stat(p)).size;
    else if (e.isDirectory) total += await folderBytes(p);
  }
  return total;
}

/** Options of {@link ModelFolder}. */
export interface ModelFolderOptions {
  /** How long a scan of the folder is reused, in milliseconds. */
  rescanMs: number;
  /** Told about problems found while scanning (skipped entries). */
  warn?: (message: string, fields: Record<string, unknown>) => void;
}

/** The models in one folder, with versions, upload and removal. */
export class ModelFolder {
  /** The folder. */
  readonly dir: string;
  #reg: Registry;
  #opts: ModelFolderOptions;
  #infoCache = new Map<string, ModelVersion>();
  #listing?: { at: number; models: Map<string, ModelVersion[]> };
  #scanning?: Promise<Map<string, ModelVersion[]>>;
  #lock: Promise<unknown> = Promise.resolve();
  #uploadSeq = 0;
  #warned = new Set<string>();

  constructor(dir: string, registry: Registry, options: ModelFolderOptions) {
    this.dir = dir;
    this.#reg = registry;
    this.#opts = options;
  }

  #warn(message: string, fields: Record<string, unknown>): void {
    const key = message + JSON.stringify(fields);
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    this.#opts.warn?.(message, fields);
  }

  /** Splits a file name into name, version and format, or undefined. */
  #parseFileName(fileName: string): { stem: string; format?: FormatPlugin } {
    let format: FormatPlugin | undefined;
    try {
      format = this.#reg.formatForPath(fileName);
    } catch { /* unknown extension */ }
    const lower = fileName.toLowerCase();
    const ext = format?.extensions.filter((e) => lower.endsWith(e)).sort((
      a,
      b,
    ) => b.length - a.length)[0];
    const stem = ext
      ? fileName.slice(0, fileName.length - ext.length)
      : fileName.replace(/\.[^.]*$/, "");
    return { stem, format };
  }

  async #candidates(): Promise<Candidate[]> {
    const out: Candidate[] = [];
    const entries: Deno.DirEntry[] = [];
    for await (const e of Deno.readDir(this.dir)) entries.push(e);
    entries.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    for (let e of entries) {
      if (e.name.startsWith(".")) continue;
      const path = join(this.dir, e.name);
      if (e.isSymlink) {
        // Links are followed (a registry of links to files kept elsewhere).
        const t = await Deno.stat(path).catch(() => undefined);
        if (!t) continue;
        e = { ...e, isFile: t.isFile, isDirectory: t.isDirectory };
      }
      if (e.isFile) {
        const { stem, format } = this.#parseFileName(e.name);
        if (!format) continue;
        const at = stem.lastIndexOf("@");
        const name = at >= 0 ? stem.slice(0, at) : stem;
        const version = at >= 0 ? stem.slice(at + 1) : "1";
        if (!NAME_RE.test(name) || !VERSION_RE.test(version)) {
          this.#warn("registry: skipped a file with an unusable name", {
            file: e.name,
          });
          continue;
        }
        out.push({
          name,
          version,
          path,
          file: e.name,
          folder: false,
          hf: false,
        });
      } else if (e.isDirectory) {
        if (!NAME_RE.test(e.name)) {
          this.#warn("registry: skipped a folder with an unusable name", {
            file: e.name,
          });
          continue;
        }
        const inner: Deno.DirEntry[] = [];
        for await (const x of Deno.readDir(path)) inner.push(x);
        if (inner.some((x) => x.isFile && x.name === "config.json")) {
          out.push({
            name: e.name,
            version: "1",
            path,
            file: e.name,
            folder: true,
            hf: true,
          });
          continue;
        }
        for (
          const v of inner.filter((x) =>
            x.isDirectory && !x.name.startsWith(".")
          ).sort((a, b) => compareVersions(a.name, b.name))
        ) {
          if (!VERSION_RE.test(v.name)) continue;
          const vdir = join(path, v.name);
          const files: string[] = [];
          for await (const f of Deno.readDir(vdir)) {
            if (f.isFile && !f.name.startsWith(".")) files.push(f.name);
          }
          files.sort();
          const rel = `${e.name}/${v.name}`;
          const modelfile = files.includes("Modelfile")
            ? { modelfile: join(vdir, "Modelfile") }
            : {};
          if (files.includes("config.json")) {
            out.push({
              name: e.name,
              version: v.name,
              path: vdir,
              file: rel,
              folder: true,
              hf: true,
              ...modelfile,
            });
            continue;
          }
          const weights = files.filter((f) => f !== "Modelfile");
          const model = weights.find((f) =>
            f.startsWith("model.") && this.#parseFileName(f).format
          ) ??
            (weights.length === 1 ? weights[0] : undefined);
          out.push({
            name: e.name,
            version: v.name,
            path: model ? join(vdir, model) : vdir,
            file: model ? `${rel}/${model}` : rel,
            folder: !model,
            hf: false,
            ...modelfile,
          });
        }
      }
    }
    return out;
  }

  async #read(c: Candidate): Promise<ModelVersion> {
    const st = await Deno.stat(c.path);
    const bytes = c.folder ? await folderBytes(c.path) : st.size;
    const key = `${c.path}|${bytes}|${st.mtime?.getTime()}`;
    const cached = this.#infoCache.get(key);
    if (cached) return cached;
    const info = await describeVersion(this.#reg, c, bytes, st.mtime);
    for (const k of this.#infoCache.keys()) {
      if (k.startsWith(`${c.path}|`)) this.#infoCache.delete(k);
    }
    this.#infoCache.set(key, info);
    return info;
  }

  /** Every model and its versions (oldest first), by name. */
  list(): Promise<Map<string, ModelVersion[]>> {
    const l = this.#listing;
    if (l && performance.now() - l.at < this.#opts.rescanMs) {
      return Promise.resolve(l.models);
    }
    this.#scanning ??= this.#scan().finally(() => {
      this.#scanning = undefined;
    });
    return this.#scanning;
  }

  async #scan(): Promise<Map<string, ModelVersion[]>> {
    const models = new Map<string, ModelVersion[]>();
    for (const c of await this.#candidates()) {
      const list = models.get(c.name) ?? [];
      if (list.some((v) => v.version === c.version)) {
        this.#warn("registry: two entries for one version; the first wins", {
          model: c.name,
          version: c.version,
          file: c.file,
        });
        continue;
      }
      list.push(await this.#read(c));
      models.set(c.name, list);
    }
    for (const list of models.values()) {
      list.sort((a, b) => compareVersions(a.version, b.version));
    }
    // Forget what was read about files that are gone.
    const present = new Set(
      [...models.values()].flatMap((l) => l.map((v) => v.path)),
    );
    for (const k of this.#infoCache.keys()) {
      if (
        !present.has(k.slice(0, k.lastIndexOf("|", k.lastIndexOf("|") - 1)))
      ) {
        this.#infoCache.delete(k);
      }
    }
    const sorted = new Map(
      [...models.entries()].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0),
    );
    this.#listing = { at: performance.now(), models: sorted };
    return sorted;
  }

  /**
   * Removes what an interrupted upload or version folder left behind
   * (`.upload-*.partial` files, `.add-*.partial` folders: a server killed
   * mid-write never reaches its own cleanup); run at start-up, before any
   * upload. `.pull-*.partial` downloads are kept: `/api/pull` resumes them.
   * Returns the names removed.
   */
  async sweep(): Promise<string[]> {
    const removed: string[] = [];
    for await (const e of Deno.readDir(this.dir)) {
      if (!/^\.(upload|add)-[\w-]+\.partial$/.test(e.name)) continue;
      try {
        await Deno.remove(join(this.dir, e.name), { recursive: true });
        removed.push(e.name);
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
    }
    return removed.sort();
  }

  /** Forgets the last scan (after a change on disk). */
  invalidate(): void {
    this.#listing = undefined;
  }

  /** The versions of one model; 404 when it has none. */
  async versions(name: string): Promise<ModelVersion[]> {
    const list = (await this.list()).get(name);
    if (!list || list.length === 0) {
      throw new HttpError(404, `Model "${name}" not found`);
    }
    return list;
  }

  /** One version, or the latest; 404 when absent. */
  async resolve(name: string, version?: string): Promise<ModelVersion> {
    const list = await this.versions(name);
    if (version === undefined || version === "latest") {
      return list[list.length - 1];
    }
    const v = list.find((x) => x.version === version);
    if (!v) {
      throw new HttpError(
        404,
        `Model "${name}" has no version "${version}" (versions: ${
          list.map((x) => x.version).join(", ")
        })`,
      );
    }
    return v;
  }

  /** Runs `fn` with no other upload or removal running. */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.#lock.then(fn);
    this.#lock = p.catch(() => {});
    return p;
  }

  /**
   * Stores an uploaded model: streams the body to a temporary file in the
   * folder, reads and validates it with the format plugins, and links it
   * into place as `name@version.ext`. Any failure removes the temporary
   * file, so the folder is left as it was.
   */
  async upload(
    name: string,
    body: ReadableStream<Uint8Array> | null,
    options: {
      version?: string;
      format?: string;
      maxBytes: number;
      signal?: AbortSignal;
    },
  ): Promise<ModelVersion> {
    this.#checkNames(name, options.version);
    let forced: FormatPlugin | undefined;
    if (options.format !== undefined) {
      try {
        forced = this.#reg.format(options.format);
      } catch (e) {
        throw new HttpError(400, (e as Error).message);
      }
    }
    if (!body) {
      throw new HttpError(400, "Empty upload: the body holds no model");
    }
    const tmp = join(
      this.dir,
      `.upload-${++this.#uploadSeq}-${Date.now().toString(36)}.partial`,
    );
    try {
      const bytes = await this.#receive(
        body,
        tmp,
        options.maxBytes,
        options.signal,
      );
      if (bytes === 0) {
        throw new HttpError(400, "Empty upload: the body holds no model");
      }
      return await this.#adopt(name, tmp, options.version, forced);
    } finally {
      await Deno.remove(tmp).catch(() => {});
    }
  }

  /**
   * Stores a model file that was written elsewhere in the folder (a
   * download): validates it as an upload is validated and links it into
   * place as `name@version.ext`; the file itself is removed either way.
   */
  async adoptFile(
    name: string,
    tmp: string,
    options: { version?: string; format?: string } = {},
  ): Promise<ModelVersion> {
    this.#checkNames(name, options.version);
    let forced: FormatPlugin | undefined;
    if (options.format !== undefined) {
      try {
        forced = this.#reg.format(options.format);
      } catch (e) {
        throw new HttpError(400, (e as Error).message);
      }
    }
    try {
      return await this.#adopt(name, tmp, options.version, forced);
    } finally {
      await Deno.remove(tmp).catch(() => {});
    }
  }

  #checkNames(name: string, version?: string): void {
    if (!NAME_RE.test(name)) {
      throw new HttpError(
        400,
        `Invalid model name "${name}": use letters, digits, ".", "_" and "-" (at most 128, starting with a letter or digit)`,
      );
    }
    if (version !== undefined && !VERSION_RE.test(version)) {
      throw new HttpError(
        400,
        `Invalid version "${version}": use letters, digits, ".", "_" and "-" (at most 64)`,
      );
    }
  }

  /** The version a new entry gets: the one asked for (409 when taken), or the next number. */
  async #newVersion(name: string, version?: string): Promise<string> {
    this.invalidate();
    const existing = (await this.list()).get(name) ?? [];
    if (version === undefined) {
      const numbers = existing.map((v) => v.version).filter((v) =>
        /^\d+$/.test(v)
      ).map(Number);
      return String(numbers.length ? Math.max(...numbers) + 1 : 1);
    }
    if (existing.some((v) => v.version === version)) {
      throw new HttpError(
        409,
        `Model "${name}" already has version "${version}"; delete it first or use another version`,
      );
    }
    return version;
  }

  async #adopt(
    name: string,
    tmp: string,
    wanted: string | undefined,
    forced: FormatPlugin | undefined,
  ): Promise<ModelVersion> {
    const format = await this.#validate(tmp, forced, name);
    const ext = format.extensions[0] ?? `.${format.name}`;
    let linked = false;
    try {
      return await this.#exclusive(async () => {
        const version = await this.#newVersion(name, wanted);
        const final = join(this.dir, `${name}@${version}${ext}`);
        const taken = () =>
          new HttpError(
            409,
            `${basename(final)} already exists in the registry folder`,
          );
        try {
          // A hard link never replaces an existing file.
          await Deno.link(tmp, final);
        } catch (e) {
          if (e instanceof Deno.errors.AlreadyExists) throw taken();
          // File systems without hard links: check, then rename (uploads
          // are serialized, so only another program could race us).
          if (await Deno.lstat(final).then(() => true, () => false)) {
            throw taken();
          }
          await Deno.rename(tmp, final);
        }
        linked = true;
        this.invalidate();
        return await this.resolve(name, version);
      });
    } finally {
      if (!linked) this.invalidate();
    }
  }

  /**
   * Adds a version as a folder `name/version/`: `fill` writes its files
   * into a temporary folder (links to existing weights, a Modelfile, a
   * download), `check` may refuse the result, and the folder is renamed
   * into place. Any failure removes the temporary folder.
   */
  async addFolder(
    name: string,
    version: string | undefined,
    fill: (dir: string) => Promise<void>,
    check?: (dir: string) => Promise<void>,
  ): Promise<ModelVersion> {
    this.#checkNames(name, version);
    const tmp = join(
      this.dir,
      `.add-${++this.#uploadSeq}-${Date.now().toString(36)}.partial`,
    );
    await Deno.mkdir(tmp);
    try {
      await fill(tmp);
      await check?.(tmp);
      return await this.#exclusive(async () => {
        const v = await this.#newVersion(name, version);
        const top = join(this.dir, name);
        const st = await Deno.lstat(top).catch(() => undefined);
        if (st && !st.isDirectory) {
          throw new HttpError(
            409,
            `${name} exists in the registry folder and is no folder`,
          );
        }
        if (
          st &&
          await Deno.lstat(join(top, "config.json")).then(
            () => true,
            () => false,
          )
        ) {
          throw new HttpError(
            409,
            `${name}/ is a Hugging Face checkpoint folder; it cannot hold versions`,
          );
        }
        await Deno.mkdir(top, { recursive: true });
        const final = join(top, v);
        if (await Deno.lstat(final).then(() => true, () => false)) {
          throw new HttpError(
            409,
            `${name}/${v} already exists in the registry folder`,
          );
        }
        await Deno.rename(tmp, final);
        this.invalidate();
        return await this.resolve(name, v);
      });
    } finally {
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
    }
  }

  async #receive(
    body: ReadableStream<Uint8Array>,
    tmp: string,
    maxBytes: number,
    signal?: AbortSignal,
  ): Promise<number> {
    const file = await Deno.open(tmp, { write: true, createNew: true });
    let total = 0;
    const reader = body.getReader();
    const onAbort = () => reader.cancel().catch(() => {});
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      while (true) {
        if (signal?.aborted) throw signal.reason;
        const { done, value } = await reader.read();
        if (done) break;
        total += value.byteLength;
        if (total > maxBytes) throw tooLarge(total, maxBytes);
        let off = 0;
        while (off < value.byteLength) {
          off += await file.write(value.subarray(off));
        }
      }
      if (signal?.aborted) throw signal.reason;
      await file.sync();
    } catch (e) {
      await reader.cancel().catch(() => {});
      throw e;
    } finally {
      signal?.removeEventListener("abort", onAbort);
      file.close();
    }
    return total;
  }

  /**
   * Reads a model file or folder back with the format plugins (their
   * validate hooks included); 400 with the reason when it is no valid model.
   */
  async check(path: string, name: string): Promise<void> {
    await this.#validate(path, undefined, name);
  }

  /** Reads the upload back; 400 with the reason when it is no valid model. */
  async #validate(
    tmp: string,
    forced: FormatPlugin | undefined,
    name: string,
  ): Promise<FormatPlugin> {
    const fail = (why: string) =>
      new HttpError(400, `Upload of "${name}" refused: ${why}`);
    let opened;
    try {
      opened = await openModel(this.#reg, tmp, {
        format: forced?.name,
      });
    } catch (e) {
      const msg = (e instanceof Error ? e.message : String(e)).replaceAll(
        tmp,
        "the upload",
      );
      throw fail(
        forced
          ? msg
          : `${msg} (pass ?format=NAME when the format has no magic bytes)`,
      );
    }
    try {
      const format = opened.format;
      if (format.validate) {
        const problems = await format.validate(opened.source, {
          resolve: opened.resolve,
        });
        if (problems.length > 0) {
          throw fail(
            `${format.name} validation found ${problems.length} problem${
              problems.length > 1 ? "s" : ""
            }: ${problems.slice(0, 5).join("; ")}`.replaceAll(
              tmp,
              "the upload",
            ),
          );
        }
      }
      if (opened.file.models.length === 0) {
        throw fail("the file holds no model");
      }
      for (const m of opened.file.models) {
        if (!m.config) continue;
        const infos = new Map(
          m.tensors.names().map((n) => [n, m.tensors.info(n)]),
        );
        let check;
        try {
          check = checkNetworkTensors(this.#reg, m.config, infos);
        } catch (e) {
          throw fail(`model "${m.id}": ${(e as Error).message}`);
        }
        if (check.missing.length || check.wrongShape.length) {
          const parts = [
            ...check.missing.map((n) => `missing ${n}`),
            ...check.wrongShape.map((w) =>
              `${w.name} is [${w.actual.join(", ")}], expected [${
                w.expected.join(", ")
              }]`
            ),
          ];
          throw fail(
            `model "${m.id}": its tensors do not fit its network config (${
              parts.slice(0, 5).join("; ")
            })`,
          );
        }
      }
      // Linked only if the model it holds would build (hyperparameters
      // against tensors, before any weight is read).
      const problem = modelBuildProblem(opened.file, name);
      if (problem !== undefined) {
        throw fail(
          `${problem} (it would not build)`.replaceAll(tmp, "the upload"),
        );
      }
      return format;
    } finally {
      opened.close();
    }
  }

  /** Deletes one version, or every version; returns what was removed. */
  remove(name: string, version?: string): Promise<ModelVersion[]> {
    return this.#exclusive(async () => {
      this.invalidate();
      const targets = version === undefined
        ? await this.versions(name)
        : [await this.resolve(name, version)];
      for (const t of targets) {
        const layoutFolder = t.file.includes("/");
        const top = join(this.dir, t.file.split("/")[0]);
        if (!layoutFolder) {
          await Deno.remove(t.path, { recursive: true });
          continue;
        }
        // name/version/…: remove the version folder, then name/ when empty.
        const [, v] = t.file.split("/");
        await Deno.remove(join(top, v), { recursive: true });
        let empty = true;
        for await (const _ of Deno.readDir(top)) {
          empty = false;
          break;
        }
        if (empty) await Deno.remove(top);
      }
      this.invalidate();
      return targets;
    });
  }
}
