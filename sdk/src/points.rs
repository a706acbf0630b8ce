//! One binding per extension point: a world exporting just that point's
//! interface, so a component exports the points its policy implements and
//! nothing else ([`crate::export_plugin!`] picks them). The shared types and
//! the host interface come from [`crate::bindings`].

macro_rules! point_bindings {
    ($($module:ident => $world:literal, $export:literal, $path:literal $(, $types:literal)?;)*) => {
        $(
            #[doc(hidden)]
            pub mod $module {
                point_bindings!(@generate $world, $export, $path $(, $types)?);
            }
        )*
    };
    // Points whose functions use the contract's types share the SDK's.
    (@generate $world:literal, $export:literal, $path:literal, $types:literal) => {
        wit_bindgen::generate!({
            inline: $world,
            path: "../wit/scheduler.wit",
            with: { $types: crate::bindings::tephra::scheduler::types },
            pub_export_macro: true,
            export_macro_name: $export,
            default_bindings_module: $path,
        });
    };
    (@generate $world:literal, $export:literal, $path:literal) => {
        wit_bindgen::generate!({
            inline: $world,
            path: "../wit/scheduler.wit",
            pub_export_macro: true,
            export_macro_name: $export,
            default_bindings_module: $path,
        });
    };
}

include!("points_table.rs");
