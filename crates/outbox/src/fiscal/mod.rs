//! The fiscal workflows around a sale: payments and their REP (`payments`), tickets and the factura global (`global_invoice`), the counter's day of tickets and what a list row needs beyond its columns (`counter`), their intake links (`fiscal_intake`), the contador's month (`reports`), SAT's 69-B list (`screening`), duplicates and their decisions (`duplicates`), CFDIs imported from anywhere (`reconciliation`), SAT's record of the emisor's CFDIs and the reconciliation with it (`sat_reconcile`) and the contador's decisions about an unknown one (`sat_unknowns`), the month's received CFDIs (`recibidos`), the gap a restore leaves (`history_gap`) and the Tablero (`dashboard`), SAT's reference exchange rates for the TipoCambio band (`exchange_rates`), and what follows a stamped CFDI (`follow_up`: credit notes, substitutes).

pub mod counter;
pub mod dashboard;
pub mod duplicates;
pub mod exchange_rates;
pub(crate) mod fiscal_intake;
pub mod follow_up;
pub mod global_invoice;
pub mod history_gap;
pub mod payments;
pub mod recibidos;
pub mod reconciliation;
pub mod reports;
pub mod sat_reconcile;
pub mod sat_status;
pub mod sat_unknowns;
pub mod screening;
