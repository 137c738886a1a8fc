//! The names of every command the shell registers. `build.rs` declares them to Tauri's access
//! control (each needs an explicit `allow-…` in `capabilities/`), and a test checks this list
//! equals what `lib.rs` registers.

pub const ALL: &[&str] = &[
    "app_status",
    "list_invoices",
    "invoice_counts",
    "invoice_detail",
    "preview_sale",
    "record_sale",
    "local_now",
    "add_note",
    "resolve_note",
    "export_xml",
    "save_emisor",
    "save_pacs",
    "save_drain",
    "save_operators",
    "select_operator",
    "load_demo_data",
    "invoice_action",
    "set_sandbox_fault",
];
