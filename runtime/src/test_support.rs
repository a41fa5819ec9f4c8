//! The `test-support` feature: items only tests outside this crate call (the store contract
//! suites in `protocols-testkit`, the other crates' tests) are public with it and crate-private
//! (or absent) without it, so they are never part of the API a user reads. Hidden from the docs
//! either way, as the `fuzzing` feature's hooks are.

/// Declares a function crate-private, and public (hidden from the docs) with the
/// `test-support` feature: for what the runtime itself calls and only tests call from outside.
macro_rules! test_visible {
    ($(#[$attr:meta])* fn $name:ident $($rest:tt)*) => {
        $(#[$attr])*
        #[cfg(feature = "test-support")]
        #[doc(hidden)]
        pub fn $name $($rest)*

        $(#[$attr])*
        #[cfg(not(feature = "test-support"))]
        pub(crate) fn $name $($rest)*
    };
}

pub(crate) use test_visible;
