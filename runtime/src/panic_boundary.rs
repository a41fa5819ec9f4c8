//! Where a handler's panic is logged. The dispatch catches it ([`crate::dispatch`] answers the
//! request with an internal error); the location only the panic hook knows, so a hook
//! installed once (chained to the one it replaces) logs a panic raised while a handler is
//! polled, in that request's span, with its location, and stays silent otherwise, leaving every
//! other panic to the previous hook. A hook set later replaces this one: handler panics are
//! still caught and answered, and logged by that hook instead.

use std::cell::Cell;
use std::panic::PanicHookInfo;
use std::sync::Once;

use crate::quote::quote;

thread_local! {
    /// Whether a handler's future is being polled on this thread.
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// Installs the hook, once per process.
pub(crate) fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_HANDLER.get() {
                log(info);
            } else {
                previous(info);
            }
        }));
    });
}

fn log(info: &PanicHookInfo<'_>) {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    let location = info.location().map(|location| {
        let (file, line, column) = (location.file(), location.line(), location.column());
        format!("{file}:{line}:{column}")
    });
    tracing::error!(
        location = location.as_deref().unwrap_or("unknown"),
        panic = %quote(message),
        "a handler panicked; its request is answered with an internal error"
    );
}

/// Marks a handler's future as being polled on this thread until dropped (also while a
/// panic unwinds through it).
pub(crate) struct Polling {
    previous: bool,
}

impl Polling {
    #[inline]
    pub(crate) fn enter() -> Self {
        Self {
            previous: IN_HANDLER.replace(true),
        }
    }
}

impl Drop for Polling {
    #[inline]
    fn drop(&mut self) {
        IN_HANDLER.set(self.previous);
    }
}
