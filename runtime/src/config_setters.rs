//! Chained setters for the `#[non_exhaustive]` configuration structs of the runtime and of the
//! protocol crates: outside its crate a config is built as
//! `HttpConfig::default().tail_capacity(64)`, so adding a field is not a breaking change. One
//! macro writes every setter, so they all behave alike.

/// Writes `pub fn field(mut self, value) -> Self` for each listed field of `$config`, each
/// documented by a link to the field's own doc. Exported for the protocol crates' configs;
/// not part of the API.
#[doc(hidden)]
#[macro_export]
macro_rules! config_setters {
    ($config:ty { $($field:ident: $type:ty),+ $(,)? }) => {
        impl $config {
            $(
                #[doc = concat!("Sets [`", stringify!($field), "`](Self::", stringify!($field), ").")]
                #[must_use]
                pub fn $field(mut self, $field: $type) -> Self {
                    self.$field = $field;
                    self
                }
            )+
        }
    };
}
