//! Rust types and linker glue of the `warden:backend/sandbox` world (wit/worlds.wit), generated
//! from the same WIT package the V8 engine's TypeScript types come from. Every import may trap
//! (`trappable`): a host function that must end the sandbox (WASI `exit`, a deadline reached while
//! the guest waits in `poll`, the instance going away during a host call) returns an error.
wasmtime::component::bindgen!({
    path: "../../../wit",
    world: "warden:backend/sandbox",
    imports: { default: trappable },
    // host → guest values borrow: request tensors are lowered straight from the host's buffers
    ownership: Borrowing { duplicate_if_necessary: true },
    with: {
        "wasi:io/poll.pollable": crate::wasi::Pollable,
        "wasi:io/error.error": crate::wasi::IoError,
        "wasi:io/streams.input-stream": crate::wasi::InputStream,
        "wasi:io/streams.output-stream": crate::wasi::OutputStream,
        "wasi:cli/terminal-input.terminal-input": crate::wasi::TerminalInput,
        "wasi:cli/terminal-output.terminal-output": crate::wasi::TerminalOutput,
    },
});
