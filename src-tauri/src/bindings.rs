//! The TypeScript bindings of every transport type, rendered from the Rust types with `ts-rs`.
//! `tests/bindings.rs` compares them with the checked-in files in `ui/src/lib/ipc/bindings/`
//! and fails on any drift; `TIMBRA_BLESS_BINDINGS=1 cargo test -p timbra-app --test bindings`
//! rewrites them.

use ts_rs::{Config, TS};

use crate::dto::*;
use crate::error::{AppError, CsdProblem, FieldErrorDto};

/// ts-rs settings: ids are JavaScript numbers (they stay far below 2^53), not bigint.
pub fn config() -> Config {
    Config::new().with_large_int("number")
}

fn one<T: TS + 'static>(cfg: &Config) -> (String, String) {
    let file = T::output_path()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| format!("{}.ts", T::name(cfg)));
    let text = T::export_to_string(cfg).unwrap_or_else(|e| format!("// ts-rs failed for {}: {e}\n", T::name(cfg)));
    (file, text)
}

/// (file name, contents) of every binding, sorted by file name.
pub fn all() -> Vec<(String, String)> {
    let cfg = config();
    let mut v = vec![
        one::<AppError>(&cfg),
        one::<FieldErrorDto>(&cfg),
        one::<CsdProblem>(&cfg),
        one::<InvoiceStateDto>(&cfg),
        one::<BadgeDto>(&cfg),
        one::<RoleDto>(&cfg),
        one::<ModeDto>(&cfg),
        one::<PacNameDto>(&cfg),
        one::<PacEnvironmentDto>(&cfg),
        one::<OperatorDto>(&cfg),
        one::<EmisorDto>(&cfg),
        one::<PacConfigDto>(&cfg),
        one::<PacsDto>(&cfg),
        one::<DrainSettingsDto>(&cfg),
        one::<AppStatusDto>(&cfg),
        one::<EmisorSetupDto>(&cfg),
        one::<PacInputDto>(&cfg),
        one::<ListQueryDto>(&cfg),
        one::<InvoiceRowDto>(&cfg),
        one::<InvoicePageDto>(&cfg),
        one::<CountsDto>(&cfg),
        one::<ActedByDto>(&cfg),
        one::<SaleDto>(&cfg),
        one::<AttemptDto>(&cfg),
        one::<EvidenceDto>(&cfg),
        one::<CfdiDto>(&cfg),
        one::<NoteDto>(&cfg),
        one::<TimelineEntryDto>(&cfg),
        one::<ActionKindDto>(&cfg),
        one::<RetryModeDto>(&cfg),
        one::<RefusalDto>(&cfg),
        one::<ActionDto>(&cfg),
        one::<ReasonDto>(&cfg),
        one::<outbox::strategy::ReasonCode>(&cfg),
        one::<outbox::strategy::RefusalCode>(&cfg),
        one::<FoundCfdiDto>(&cfg),
        one::<StrategyDto>(&cfg),
        one::<InvoiceDetailDto>(&cfg),
        one::<TaxDraftDto>(&cfg),
        one::<ConceptoDraftDto>(&cfg),
        one::<ReceptorDraftDto>(&cfg),
        one::<SaleDraftDto>(&cfg),
        one::<TotalsDto>(&cfg),
        one::<SalePreviewDto>(&cfg),
        one::<RecordedDto>(&cfg),
        one::<DemoLoadedDto>(&cfg),
        one::<SandboxFaultDto>(&cfg),
        one::<SavedFileDto>(&cfg),
        one::<XmlSourceDto>(&cfg),
        one::<InvoiceChangedDto>(&cfg),
        one::<DrainProgressDto>(&cfg),
        one::<PacHealthStatusDto>(&cfg),
        one::<PacHealthDto>(&cfg),
        // Free-form JSON (timeline details, the sale's canonical body).
        one::<serde_json::Value>(&cfg),
    ];
    v.sort();
    v
}
