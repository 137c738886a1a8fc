//! Running Timbra: emisor and CSD settings (`settings`), several emisores, one database each (`emisores`), the CSD's renewal and the certificates kept by NoCertificado (`csd`), Modo sandbox's emisor (`sandbox`), the e.firma for SAT's web services (`efirma`), where SAT's services are (`sat_service`), the emisor's logo for the PDF (`logo`), where the database is (`location`), backups and restore (`backup`, `backup_schedule`), role credentials (`role_credentials`), live drain processes (`workers`) and change notifications for consoles (`changes`).

pub mod backup;
pub mod backup_schedule;
pub mod changes;
pub mod csd;
pub mod efirma;
pub mod emisores;
pub mod location;
pub mod logo;
pub mod role_credentials;
pub mod sandbox;
pub mod sat_service;
pub mod settings;
pub mod workers;
