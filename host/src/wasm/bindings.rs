//! Host bindings for `wit/scheduler.wit`. Everything else in tephra uses the
//! types generated here.

wasmtime::component::bindgen!({
    world: "plugin",
    path: "../wit",
    // Snapshots built two ways are compared in tests.
    additional_derives: [PartialEq],
});
