// Types for the parts of build-wasm.mjs that TypeScript code (tests) imports.
export const ROOT: string;
export const WIT_DIR: string;
/** Copies the WASI WIT packages the world depends on into wit/deps. */
export function prepareWitDeps(): void;
/** Generates the host-side TypeScript types for wit/ into `outDir`; resolves to the directory. */
export function generateHostTypes(outDir?: string): Promise<string>;
/** Builds every sample component and hostile fixture that is out of date. */
export function buildAll(): Promise<void>;
