//! Generated bindings for the `transformer` world.
//!
//! Kept in one place so the SDK can wrap them; users reach the raw types
//! through [`crate::wit`] only when they need the encoding itself.

wit_bindgen::generate!({
    world: "transformer",
    path: "../wit",
    pub_export_macro: true,
    export_macro_name: "__export_transformer",
    default_bindings_module: "weir_guest::bindings",
});
