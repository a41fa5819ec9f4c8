//! The one place codegen spells the path generated code names the runtime by: the runtime's
//! hidden `codegen` module, which re-exports exactly what generated modules use. Emitters bind
//! `let door = door::path();` and write `#door::Item`, so moving the door is one edit here.

use proc_macro2::TokenStream;
use quote::quote;

/// The path of the runtime's door for generated code.
pub fn path() -> TokenStream {
    quote! { ::protocols_runtime::codegen }
}
