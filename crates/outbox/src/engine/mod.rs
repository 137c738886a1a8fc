//! The drain's work: claims, tries, evidence and fenced verdicts (`drain`), a cancellation request carried out (`cancel_step`), the JSON lane (`facturapi_lane`), the PACs a database knows (`pacs`), the attempts it opens (`attempts`), the people's actions on an invoice (`actions`) and on the Bandeja's selection (`bulk`), the facts a verdict reads (`facts`), SAT's *Descarga Masiva* requests as durable jobs (`sat_requests`).

pub mod actions;
pub mod attempts;
pub mod bulk;
pub mod cancel_step;
pub mod drain;
pub mod facts;
pub mod facturapi_lane;
pub mod pacs;
pub mod sat_requests;
