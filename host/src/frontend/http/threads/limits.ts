/** Most front-end threads (`--http-threads`): each holds 2 MiB of rings and its own event loop. */
export const MAX_HTTP_THREADS = 64;
