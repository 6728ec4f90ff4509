// Types for the parts of build-wasm.mjs that TypeScript code (tests) imports.
export const ROOT: string;
export const WIT_DIR: string;
/** Copies the WASI WIT packages the world depends on into wit/deps. */
export function prepareWitDeps(): void;
/** Generates the host-side TypeScript types for wit/ into `outDir`; resolves to the directory. */
export function generateHostTypes(outDir?: string): Promise<string>;
/** Builds every sample component and hostile fixture that is out of date. */
export function buildAll(): Promise<void>;
/**
 * Componentizes one JS module against `world` of the WIT package at `witPath` (default Warden's
 * wit/); resolves to false when `out` was already up to date.
 */
export function componentizeJs(opts: { source: string; world: string; out: string; features?: string[]; witPath?: string }): Promise<boolean>;
/**
 * Compiles C `sources` (in `srcDir`) with the bindings in `genDir` and the headers in
 * `headerDir` to a component of `world` at `out`; resolves to false when it was up to date.
 */
export function buildC(opts: {
  srcDir: string;
  sources: string[];
  world?: string;
  out: string;
  defines?: string[];
  extraFiles?: Record<string, Uint8Array>;
  witPath?: string;
  genDir?: string;
  headerDir?: string;
}): Promise<boolean>;
/** Generates the guest-side TypeScript declarations of wit/ (world `sandboxed-backend-with-clocks`) into `outDir`. */
export function generateGuestTypes(outDir: string): Promise<string>;
