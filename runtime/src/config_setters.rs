//! Chained setters for the runtime's `#[non_exhaustive]` configuration structs: outside the
//! runtime a config is built as `HttpConfig::default().tail_capacity(64)`, so adding a field is
//! not a breaking change. One macro writes every setter, so they all behave alike.

/// Writes `pub fn field(mut self, value) -> Self` for each listed field of `$config`.
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

pub(crate) use config_setters;
