//! Errors: one variant per gcap status, each carrying the C library's message for the call.

use std::ffi::CStr;
use std::fmt;

use crate::sys;

macro_rules! errors {
    ($($variant:ident = $code:ident, $doc:literal;)*) => {
        /// A failed gcap call: the status, as a variant, and the C library's message, which names the
        /// function and the argument (`gcap_last_error_message`).
        #[derive(Clone, Debug, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum GpuError {
            $(#[doc = $doc] $variant(String),)*
            /// A status this crate does not know (a newer library): its value and message.
            Unknown(u32, String),
        }

        impl GpuError {
            /// The error of status `code` with `message`.
            pub fn from_status(code: u32, message: String) -> Self {
                match code {
                    $(sys::$code => GpuError::$variant(message),)*
                    _ => GpuError::Unknown(code, message),
                }
            }

            /// The C status value (`GCAP_ERROR_*`).
            pub fn status(&self) -> u32 {
                match self {
                    $(GpuError::$variant(_) => sys::$code,)*
                    GpuError::Unknown(code, _) => *code,
                }
            }

            /// The C library's message (or this crate's, for errors it finds itself).
            pub fn message(&self) -> &str {
                match self {
                    $(GpuError::$variant(m) => m,)*
                    GpuError::Unknown(_, m) => m,
                }
            }
        }
    };
}

errors! {
    InvalidValue = GCAP_ERROR_INVALID_VALUE, "An argument is invalid or out of range.";
    OutOfMemory = GCAP_ERROR_OUT_OF_MEMORY, "A host or device allocation failed.";
    NotInitialized = GCAP_ERROR_NOT_INITIALIZED, "The backend cannot start (no driver or device).";
    InvalidHandle = GCAP_ERROR_INVALID_HANDLE, "A handle is destroyed or of another context.";
    NotSupported = GCAP_ERROR_NOT_SUPPORTED, "The backend or this build does not support the operation.";
    NotFound = GCAP_ERROR_NOT_FOUND, "No loaded module has a kernel of that name.";
    NotReady = GCAP_ERROR_NOT_READY, "Work is still pending.";
    IllegalState = GCAP_ERROR_ILLEGAL_STATE, "The object is in the wrong state for the operation.";
    InvalidPtx = GCAP_ERROR_INVALID_PTX, "The PTX does not parse or is not valid.";
    InvalidSource = GCAP_ERROR_INVALID_SOURCE, "NVRTC could not compile the CUDA C source.";
    IllegalAddress = GCAP_ERROR_ILLEGAL_ADDRESS, "A kernel accessed memory outside what it may touch (sticky).";
    LaunchTimeout = GCAP_ERROR_LAUNCH_TIMEOUT, "A kernel ran past the simulator's watchdog, or was interrupted (sticky).";
    Assert = GCAP_ERROR_ASSERT, "A device-side assert failed (sticky).";
    IllegalInstruction = GCAP_ERROR_ILLEGAL_INSTRUCTION, "A kernel executed an instruction that cannot run (sticky).";
    MisalignedAddress = GCAP_ERROR_MISALIGNED_ADDRESS, "A kernel accessed memory at a misaligned address (sticky).";
    LaunchFailure = GCAP_ERROR_LAUNCH_FAILURE, "A kernel failed while it ran (sticky).";
    CooperativeLaunchTooLarge = GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "The grid of a cooperative launch does not fit on the device at once.";
    StreamCaptureUnsupported = GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED, "The operation is not permitted while capturing.";
    StreamCaptureInvalidated = GCAP_ERROR_STREAM_CAPTURE_INVALIDATED, "The capture was invalidated by an earlier error.";
    StreamCaptureMerge = GCAP_ERROR_STREAM_CAPTURE_MERGE, "The operation would merge two independent captures.";
    StreamCaptureUnmatched = GCAP_ERROR_STREAM_CAPTURE_UNMATCHED, "The capture was not begun on this stream or has already ended.";
    StreamCaptureUnjoined = GCAP_ERROR_STREAM_CAPTURE_UNJOINED, "Forked work was not joined back into the origin stream.";
    StreamCaptureIsolation = GCAP_ERROR_STREAM_CAPTURE_ISOLATION, "A dependency would cross the capture boundary.";
    StreamCaptureImplicit = GCAP_ERROR_STREAM_CAPTURE_IMPLICIT, "Implicit dependency on a capturing stream.";
    CapturedEvent = GCAP_ERROR_CAPTURED_EVENT, "The event was last recorded during a capture.";
    StreamCaptureWrongThread = GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD, "The capture must be ended on the thread that began it.";
    GraphExecUpdateFailure = GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "The executable graph update was refused.";
    Backend = GCAP_ERROR_BACKEND, "The backend failed with an error gcap has no code for.";
}

/// The result of a gcap call.
pub type GpuResult<T> = Result<T, GpuError>;
/// The name oxicuda-driver gives [`GpuError`].
pub type CudaError = GpuError;
/// The name oxicuda-driver gives [`GpuResult`].
pub type CudaResult<T> = GpuResult<T>;

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = unsafe { CStr::from_ptr(sys::gcap_status_name(self.status())) };
        write!(f, "{}: {}", name.to_string_lossy(), self.message())
    }
}

impl std::error::Error for GpuError {}

/// `Ok(())` for `GCAP_SUCCESS`, else the error of `status` with this thread's C message.
pub(crate) fn check(status: sys::gcap_status) -> GpuResult<()> {
    if status == sys::GCAP_SUCCESS {
        return Ok(());
    }
    let message = unsafe { CStr::from_ptr(sys::gcap_last_error_message()) }.to_string_lossy().into_owned();
    Err(GpuError::from_status(status, message))
}

/// An error this crate finds before calling C.
pub(crate) fn invalid<T>(message: impl Into<String>) -> GpuResult<T> {
    Err(GpuError::InvalidValue(message.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_its_variant_and_name() {
        let mut code = 1u32;
        let mut seen = 0;
        while code < 1000 {
            let name = unsafe { CStr::from_ptr(sys::gcap_status_name(code)) }.to_string_lossy().into_owned();
            if name.starts_with("GCAP_ERROR_") && name != "GCAP_ERROR_UNKNOWN" {
                let e = GpuError::from_status(code, "m".into());
                assert!(!matches!(e, GpuError::Unknown(..)), "{name} has no variant");
                assert_eq!(e.status(), code);
                assert_eq!(e.to_string(), format!("{name}: m"));
                seen += 1;
            }
            code += 1;
        }
        assert_eq!(seen, 28, "statuses of the C library");
        assert!(matches!(GpuError::from_status(4242, "x".into()), GpuError::Unknown(4242, _)));
    }

    #[test]
    fn check_takes_the_c_message() {
        let e = check(sys::GCAP_ERROR_INVALID_VALUE).unwrap_err();
        assert_eq!(e.status(), sys::GCAP_ERROR_INVALID_VALUE);
        assert!(check(sys::GCAP_SUCCESS).is_ok());
        let err: Box<dyn std::error::Error> = Box::new(GpuError::NotReady("pending".into()));
        assert_eq!(err.to_string(), "GCAP_ERROR_NOT_READY: pending");
    }
}
