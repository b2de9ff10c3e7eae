//! Generated bindings for the `full-transformer` world (every import and
//! export: a component imports only what it uses, so a stateless guest
//! built with the SDK imports no state, and per-record calls work for all).
//!
//! Kept in one place so the SDK can wrap them; users reach the raw types
//! through [`crate::wit`] only when they need the encoding itself.

wit_bindgen::generate!({
    world: "full-transformer",
    path: "../wit",
    pub_export_macro: true,
    export_macro_name: "__export_transformer",
    default_bindings_module: "weir_guest::bindings",
    // Imports read their arguments in place: a batch's keys and ranges go
    // to the host without a copy each.
    ownership: Borrowing {
        duplicate_if_necessary: true
    },
});
