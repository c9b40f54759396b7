//! The C API as bindgen declares it from `include/gcap/gcap.h` and `include/gcap/sim.h`
//! (`tools/gen-rust-ffi.sh` regenerates `bindings.rs`; CI checks it matches the headers).
//! Everything here is `unsafe` to call; the rest of the crate is the safe API over it.
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case, dead_code, missing_docs)]
#![allow(clippy::all)]

include!("bindings.rs");
