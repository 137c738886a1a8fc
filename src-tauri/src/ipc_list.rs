//! The IPC surface in one list: every command the window may call (its arguments, in the order
//! the UI passes them, and its answer) and every event Timbra emits (its name and payload).
//!
//! Everything else is derived from it: `build.rs` declares the commands to Tauri's access
//! control, `lib.rs` registers their handlers, and [`crate::ipc`] renders the capability file
//! (`capabilities/main.json`), the UI's typed `api`/`events` module (`ui/src/lib/ipc/index.ts`)
//! and the TypeScript of every type they reach — `tests/generated.rs` fails when a committed file
//! differs from what this list generates.
//!
//! *Architecture Invariant:* adding a command is a line here and its function in its area's
//! file under `commands/`; nothing else is written by hand. Argument names are the command function's
//! parameter names (Tauri matches them by name).
//!
//! The list is a macro so that `build.rs` (which cannot see the crate's types) reads the same
//! text: `ipc_surface!(callback)` hands the list to `callback!`.

macro_rules! ipc_surface {
    ($then:ident) => {
        $then! {
            commands {
                app_status() -> AppStatusDto;
                list_invoices(query: ListQueryDto) -> InvoicePage;
                invoice_counts() -> Counts;
                dashboard() -> Dashboard;
                csd_standing() -> Option<CsdStanding>;
                invoice_detail(invoice_id: i64) -> InvoiceDetailDto;
                preview_sale(draft: SaleDraft) -> SalePreviewDto;
                record_sale(sale_id: String, draft: SaleDraft) -> Recorded;
                local_now() -> String;
                add_note(invoice_id: i64, text: String) -> Note;
                resolve_note(note_id: i64) -> Note;
                export_xml(invoice_id: i64, source: XmlSourceDto) -> SavedFileDto;
                save_emisor(setup: EmisorSetupDto) -> EmisorDto;
                renew_csd(renewal: CsdRenewalDto) -> EmisorDto;
                csd_certificates() -> Vec<CertificateInfo>;
                save_pacs(primary: PacInputDto, backup: Option<PacInputDto>) -> PacsDto;
                test_pac_connection(name: String) -> ConnectionReport;
                save_drain(drain: DrainSettings) -> DrainSettings;
                save_seat(seat: SeatInputDto) -> SeatDto;
                database_settings() -> DatabaseDto;
                save_database(database: DatabaseInputDto) -> DatabaseDto;
                test_database(postgres_url: String, password: Option<SecretText>) -> DatabaseProbeDto;
                live_workers() -> Vec<WorkerInfo>;
                load_demo_data() -> DemoLoadedDto;
                load_demo_tickets() -> DemoLoadedDto;
                invoice_action(invoice_id: i64, action: ActionKindDto, note: Option<String>, found: Option<FoundCfdiDto>) -> InvoiceDetailDto;
                set_sandbox_fault(fault: SandboxFaultDto) -> SandboxFaultDto;
                duplicate_groups() -> Vec<DuplicateGroup>;
                decide_duplicate(invoice_id: i64, survivor: String, order_dto: CancelOrderDto, emisor: Option<String>) -> InvoiceDetailDto;
                decide_candidate(candidate_id: i64, survivor: Option<String>, order_dto: Option<CancelOrderDto>, note: String, emisor: Option<String>) -> Vec<DuplicateGroup>;
                acknowledge_sat_unknown(uuid: String, note: String, emisor: Option<String>) -> Vec<DuplicateGroup>;
                decided_sat_unknowns() -> Vec<SatUnknownCfdi>;
                duplicate_queue() -> Vec<EmisorDuplicatesDto>;
                list_emisores() -> EmisoresDto;
                add_emisor(setup: EmisorSetupDto) -> EmisoresDto;
                switch_emisor(rfc: String) -> EmisoresDto;
                archive_emisor(rfc: String, archived: bool) -> EmisoresDto;
                save_seat_emisores(emisores: Option<Vec<String>>) -> EmisoresDto;
                cancellation_preview(uuid: String) -> CancellationPreview;
                check_sat_status(uuid: String) -> SatCheck;
                cancel_cfdi(invoice_id: i64, uuid: String, order_dto: CancelOrderDto) -> InvoiceDetailDto;
                import_cfdis(paths: Vec<String>) -> ImportReport;
                follow_up_draft(invoice_id: i64, kind: FollowUpKind) -> FollowUpDraft;
                export_pdf(invoice_id: i64) -> SavedFileDto;
                email_recipients(invoice_id: i64) -> Vec<String>;
                email_invoice(invoice_id: i64, to: Vec<String>, request_id: String) -> EmailRequestedDto;
                export_documents(desde: String, hasta: String, zip: bool) -> ExportDoneDto;
                export_selected(invoice_ids: Vec<i64>) -> BulkExportDto;
                bulk_action(invoice_ids: Vec<i64>, action: BulkActionDto, note: Option<String>) -> Vec<BulkRow>;
                channel_settings() -> ChannelsDto;
                save_api(enabled: bool, listen: String) -> ChannelsDto;
                create_api_token(name: String) -> CreatedTokenDto;
                revoke_api_token(name: String) -> ChannelsDto;
                set_api_token_limits(name: String, per_second: Option<u32>, burst: Option<u32>) -> ChannelsDto;
                save_webhook(url: String, secret: SecretText) -> ChannelsDto;
                save_smtp(smtp: SmtpInputDto) -> ChannelsDto;
                invoice_balance(invoice_id: i64) -> InvoiceBalance;
                record_payment(invoice_id: i64, payment: PaymentInputDto) -> Recorded;
                record_payment_for(invoices: Vec<PaymentShareDto>, payment: PaymentInputDto) -> Recorded;
                payments(after: Option<String>, limit: u32) -> PaymentPage;
                global_invoice_preview(periodicidad: String, desde: String, hasta: String) -> GlobalInvoicePreview;
                create_global_invoice(periodicidad: String, desde: String, hasta: String) -> GlobalInvoiceResult;
                record_ticket(sale_id: String, ticket: TicketDraftDto) -> Recorded;
                tickets_of_day(day: Option<String>) -> DayTickets;
                invoice_asides(invoice_ids: Vec<i64>) -> Vec<InvoiceAside>;
                print_pdf(invoice_id: i64) -> SavedFileDto;
                save_pdf_as(invoice_id: i64, path: String) -> SavedFileDto;
                pdf_file_name(invoice_id: i64) -> String;
                emisor_logo() -> Option<LogoInfo>;
                save_logo(path: String) -> LogoInfo;
                clear_logo() -> Option<LogoInfo>;
                month_report(month: String) -> MonthReport;
                export_month(month: String, format: MonthExportDto) -> SavedFileDto;
                import_screening_list(path: String, list_date: Option<String>, skip_bad_lines: bool) -> ScreeningImport;
                screening_check(rfc: String) -> ScreeningStatus;
                role_locks() -> Vec<RoleLockDto>;
                unlock_role(role: Role, pin: SecretText) -> Vec<RoleLockDto>;
                lock_role(role: Role) -> Vec<RoleLockDto>;
                leave_role(role: Role) -> Vec<RoleLockDto>;
                set_role_pin(role: Role, pin: SecretText, proof: RoleProofDto) -> Vec<RoleLockDto>;
                backups() -> BackupsDto;
                save_backups(policy: BackupPolicy) -> BackupsDto;
                backup_now() -> BackupsDto;
                restore_preview(path: String) -> RestorePreviewDto;
                restore_backup(path: String) -> RestoredDto;
                customers(query: Option<String>) -> Vec<Customer>;
                save_customer(id: Option<i64>, input: CustomerInput) -> Customer;
                delete_customer(id: i64) -> Vec<Customer>;
                import_customers(path: String) -> CsvImport;
                export_customers() -> SavedFileDto;
                products(query: Option<String>) -> Vec<ProductDto>;
                save_product(id: Option<i64>, input: ProductInput) -> ProductDto;
                delete_product(id: i64) -> Vec<ProductDto>;
                import_products(path: String) -> CsvImport;
                export_products() -> SavedFileDto;
                catalog_search(catalogo: Catalogo, text: String, limit: u32) -> Vec<CatalogEntryDto>;
                catalog_version() -> CatalogVersionDto;
                fiscal_options(rfc: String, regimen: Option<String>, metodo_pago: Option<String>) -> OpcionesFiscales;
                price_without_iva(precio: String, cantidad: String, tasa: String, moneda: String) -> Option<PrecioSinIva>;
                credential_store() -> CredentialStoreDto;
                about_timbra() -> AboutDto;
                export_diagnostic() -> SavedFileDto;
                update_settings() -> UpdatesDto;
                save_update_url(url: Option<String>) -> UpdatesDto;
                check_update() -> Option<UpdateOfferDto>;
                install_update(version: String) -> UpdateInstalledDto;
                sat_page() -> SatPageDto;
                save_efirma(cer_path: String, key_path: String, password: SecretText) -> SatPageDto;
                sat_reconcile(desde: String, hasta: String) -> SatPageDto;
            }
            events {
                /// An invoice's state, notes or evidence changed.
                invoice_changed = "invoice-changed": InvoiceChangedDto;
                /// The Bandeja's counters changed.
                counts_changed = "counts-changed": Counts;
                /// The drain's counters since the app started.
                drain_progress = "drain-progress": DrainProgress;
                /// A bulk export's progress (invoices written of the total).
                export_progress = "export-progress": ExportProgressDto;
            }
        }
    };
}
