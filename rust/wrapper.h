/* What the crate's FFI declarations are generated from (tools/gen-rust-ffi.sh). */
#include <gcap/gcap.h>
#include <gcap/sim.h>
