// Generated from src-tauri/src/ipc_list.rs by `cargo test -p timbra-app --test generated`
// (TIMBRA_BLESS=1 rewrites it). Do not edit: change the list and regenerate.
import { call, on } from './call';
import type { AboutDto } from './bindings/AboutDto';
import type { ActionKindDto } from './bindings/ActionKindDto';
import type { AppStatusDto } from './bindings/AppStatusDto';
import type { BackupPolicy } from './bindings/BackupPolicy';
import type { BackupsDto } from './bindings/BackupsDto';
import type { BulkActionDto } from './bindings/BulkActionDto';
import type { BulkExportDto } from './bindings/BulkExportDto';
import type { BulkRow } from './bindings/BulkRow';
import type { CancelOrderDto } from './bindings/CancelOrderDto';
import type { CancellationPreview } from './bindings/CancellationPreview';
import type { CatalogEntryDto } from './bindings/CatalogEntryDto';
import type { CatalogVersionDto } from './bindings/CatalogVersionDto';
import type { Catalogo } from './bindings/Catalogo';
import type { CertificateInfo } from './bindings/CertificateInfo';
import type { ChannelsDto } from './bindings/ChannelsDto';
import type { ConnectionReport } from './bindings/ConnectionReport';
import type { Counts } from './bindings/Counts';
import type { CreatedTokenDto } from './bindings/CreatedTokenDto';
import type { CredentialStoreDto } from './bindings/CredentialStoreDto';
import type { CsdRenewalDto } from './bindings/CsdRenewalDto';
import type { CsdStanding } from './bindings/CsdStanding';
import type { CsvImport } from './bindings/CsvImport';
import type { Customer } from './bindings/Customer';
import type { CustomerInput } from './bindings/CustomerInput';
import type { Dashboard } from './bindings/Dashboard';
import type { DatabaseDto } from './bindings/DatabaseDto';
import type { DatabaseInputDto } from './bindings/DatabaseInputDto';
import type { DatabaseProbeDto } from './bindings/DatabaseProbeDto';
import type { DayTickets } from './bindings/DayTickets';
import type { DemoLoadedDto } from './bindings/DemoLoadedDto';
import type { DrainProgress } from './bindings/DrainProgress';
import type { DrainSettings } from './bindings/DrainSettings';
import type { DuplicateGroup } from './bindings/DuplicateGroup';
import type { EmailRequestedDto } from './bindings/EmailRequestedDto';
import type { EmisorDto } from './bindings/EmisorDto';
import type { EmisorDuplicatesDto } from './bindings/EmisorDuplicatesDto';
import type { EmisorSetupDto } from './bindings/EmisorSetupDto';
import type { EmisoresDto } from './bindings/EmisoresDto';
import type { ExportDoneDto } from './bindings/ExportDoneDto';
import type { ExportProgressDto } from './bindings/ExportProgressDto';
import type { FollowUpDraft } from './bindings/FollowUpDraft';
import type { FollowUpKind } from './bindings/FollowUpKind';
import type { FoundCfdiDto } from './bindings/FoundCfdiDto';
import type { GlobalInvoicePreview } from './bindings/GlobalInvoicePreview';
import type { GlobalInvoiceResult } from './bindings/GlobalInvoiceResult';
import type { ImportReport } from './bindings/ImportReport';
import type { InvoiceAside } from './bindings/InvoiceAside';
import type { InvoiceBalance } from './bindings/InvoiceBalance';
import type { InvoiceChangedDto } from './bindings/InvoiceChangedDto';
import type { InvoiceDetailDto } from './bindings/InvoiceDetailDto';
import type { InvoicePage } from './bindings/InvoicePage';
import type { ListQueryDto } from './bindings/ListQueryDto';
import type { LogoInfo } from './bindings/LogoInfo';
import type { MonthExportDto } from './bindings/MonthExportDto';
import type { MonthReport } from './bindings/MonthReport';
import type { Note } from './bindings/Note';
import type { OpcionesFiscales } from './bindings/OpcionesFiscales';
import type { PacInputDto } from './bindings/PacInputDto';
import type { PacsDto } from './bindings/PacsDto';
import type { PaymentInputDto } from './bindings/PaymentInputDto';
import type { PaymentPage } from './bindings/PaymentPage';
import type { PaymentShareDto } from './bindings/PaymentShareDto';
import type { PrecioSinIva } from './bindings/PrecioSinIva';
import type { ProductDto } from './bindings/ProductDto';
import type { ProductInput } from './bindings/ProductInput';
import type { Recorded } from './bindings/Recorded';
import type { RestorePreviewDto } from './bindings/RestorePreviewDto';
import type { RestoredDto } from './bindings/RestoredDto';
import type { Role } from './bindings/Role';
import type { RoleLockDto } from './bindings/RoleLockDto';
import type { RoleProofDto } from './bindings/RoleProofDto';
import type { SaleDraft } from './bindings/SaleDraft';
import type { SalePreviewDto } from './bindings/SalePreviewDto';
import type { SandboxFaultDto } from './bindings/SandboxFaultDto';
import type { SatCheck } from './bindings/SatCheck';
import type { SatPageDto } from './bindings/SatPageDto';
import type { SatUnknownCfdi } from './bindings/SatUnknownCfdi';
import type { SavedFileDto } from './bindings/SavedFileDto';
import type { ScreeningImport } from './bindings/ScreeningImport';
import type { ScreeningStatus } from './bindings/ScreeningStatus';
import type { SeatDto } from './bindings/SeatDto';
import type { SeatInputDto } from './bindings/SeatInputDto';
import type { SecretText } from './bindings/SecretText';
import type { SmtpInputDto } from './bindings/SmtpInputDto';
import type { TicketDraftDto } from './bindings/TicketDraftDto';
import type { UpdateInstalledDto } from './bindings/UpdateInstalledDto';
import type { UpdateOfferDto } from './bindings/UpdateOfferDto';
import type { UpdatesDto } from './bindings/UpdatesDto';
import type { WorkerInfo } from './bindings/WorkerInfo';
import type { XmlSourceDto } from './bindings/XmlSourceDto';

export * from './call';

export const api = {
  appStatus: () => call<AppStatusDto>('app_status'),
  listInvoices: (query: ListQueryDto) => call<InvoicePage>('list_invoices', { query }),
  invoiceCounts: () => call<Counts>('invoice_counts'),
  dashboard: () => call<Dashboard>('dashboard'),
  csdStanding: () => call<CsdStanding | null>('csd_standing'),
  invoiceDetail: (invoiceId: number) => call<InvoiceDetailDto>('invoice_detail', { invoiceId }),
  previewSale: (draft: SaleDraft) => call<SalePreviewDto>('preview_sale', { draft }),
  recordSale: (saleId: string, draft: SaleDraft) => call<Recorded>('record_sale', { saleId, draft }),
  localNow: () => call<string>('local_now'),
  addNote: (invoiceId: number, text: string) => call<Note>('add_note', { invoiceId, text }),
  resolveNote: (noteId: number) => call<Note>('resolve_note', { noteId }),
  exportXml: (invoiceId: number, source: XmlSourceDto) => call<SavedFileDto>('export_xml', { invoiceId, source }),
  saveEmisor: (setup: EmisorSetupDto) => call<EmisorDto>('save_emisor', { setup }),
  renewCsd: (renewal: CsdRenewalDto) => call<EmisorDto>('renew_csd', { renewal }),
  csdCertificates: () => call<Array<CertificateInfo>>('csd_certificates'),
  savePacs: (primary: PacInputDto, backup: PacInputDto | null) => call<PacsDto>('save_pacs', { primary, backup }),
  testPacConnection: (name: string) => call<ConnectionReport>('test_pac_connection', { name }),
  saveDrain: (drain: DrainSettings) => call<DrainSettings>('save_drain', { drain }),
  saveSeat: (seat: SeatInputDto) => call<SeatDto>('save_seat', { seat }),
  databaseSettings: () => call<DatabaseDto>('database_settings'),
  saveDatabase: (database: DatabaseInputDto) => call<DatabaseDto>('save_database', { database }),
  testDatabase: (postgresUrl: string, password: SecretText | null) => call<DatabaseProbeDto>('test_database', { postgresUrl, password }),
  liveWorkers: () => call<Array<WorkerInfo>>('live_workers'),
  loadDemoData: () => call<DemoLoadedDto>('load_demo_data'),
  loadDemoTickets: () => call<DemoLoadedDto>('load_demo_tickets'),
  invoiceAction: (invoiceId: number, action: ActionKindDto, note: string | null, found: FoundCfdiDto | null) => call<InvoiceDetailDto>('invoice_action', { invoiceId, action, note, found }),
  setSandboxFault: (fault: SandboxFaultDto) => call<SandboxFaultDto>('set_sandbox_fault', { fault }),
  duplicateGroups: () => call<Array<DuplicateGroup>>('duplicate_groups'),
  decideDuplicate: (invoiceId: number, survivor: string, orderDto: CancelOrderDto, emisor: string | null) => call<InvoiceDetailDto>('decide_duplicate', { invoiceId, survivor, orderDto, emisor }),
  decideCandidate: (candidateId: number, survivor: string | null, orderDto: CancelOrderDto | null, note: string, emisor: string | null) => call<Array<DuplicateGroup>>('decide_candidate', { candidateId, survivor, orderDto, note, emisor }),
  acknowledgeSatUnknown: (uuid: string, note: string, emisor: string | null) => call<Array<DuplicateGroup>>('acknowledge_sat_unknown', { uuid, note, emisor }),
  decidedSatUnknowns: () => call<Array<SatUnknownCfdi>>('decided_sat_unknowns'),
  duplicateQueue: () => call<Array<EmisorDuplicatesDto>>('duplicate_queue'),
  listEmisores: () => call<EmisoresDto>('list_emisores'),
  addEmisor: (setup: EmisorSetupDto) => call<EmisoresDto>('add_emisor', { setup }),
  switchEmisor: (rfc: string) => call<EmisoresDto>('switch_emisor', { rfc }),
  archiveEmisor: (rfc: string, archived: boolean) => call<EmisoresDto>('archive_emisor', { rfc, archived }),
  saveSeatEmisores: (emisores: Array<string> | null) => call<EmisoresDto>('save_seat_emisores', { emisores }),
  cancellationPreview: (uuid: string) => call<CancellationPreview>('cancellation_preview', { uuid }),
  checkSatStatus: (uuid: string) => call<SatCheck>('check_sat_status', { uuid }),
  cancelCfdi: (invoiceId: number, uuid: string, orderDto: CancelOrderDto) => call<InvoiceDetailDto>('cancel_cfdi', { invoiceId, uuid, orderDto }),
  importCfdis: (paths: Array<string>) => call<ImportReport>('import_cfdis', { paths }),
  followUpDraft: (invoiceId: number, kind: FollowUpKind) => call<FollowUpDraft>('follow_up_draft', { invoiceId, kind }),
  exportPdf: (invoiceId: number) => call<SavedFileDto>('export_pdf', { invoiceId }),
  emailRecipients: (invoiceId: number) => call<Array<string>>('email_recipients', { invoiceId }),
  emailInvoice: (invoiceId: number, to: Array<string>, requestId: string) => call<EmailRequestedDto>('email_invoice', { invoiceId, to, requestId }),
  exportDocuments: (desde: string, hasta: string, zip: boolean) => call<ExportDoneDto>('export_documents', { desde, hasta, zip }),
  exportSelected: (invoiceIds: Array<number>) => call<BulkExportDto>('export_selected', { invoiceIds }),
  bulkAction: (invoiceIds: Array<number>, action: BulkActionDto, note: string | null) => call<Array<BulkRow>>('bulk_action', { invoiceIds, action, note }),
  channelSettings: () => call<ChannelsDto>('channel_settings'),
  saveApi: (enabled: boolean, listen: string) => call<ChannelsDto>('save_api', { enabled, listen }),
  createApiToken: (name: string) => call<CreatedTokenDto>('create_api_token', { name }),
  revokeApiToken: (name: string) => call<ChannelsDto>('revoke_api_token', { name }),
  setApiTokenLimits: (name: string, perSecond: number | null, burst: number | null) => call<ChannelsDto>('set_api_token_limits', { name, perSecond, burst }),
  saveWebhook: (url: string, secret: SecretText) => call<ChannelsDto>('save_webhook', { url, secret }),
  saveSmtp: (smtp: SmtpInputDto) => call<ChannelsDto>('save_smtp', { smtp }),
  invoiceBalance: (invoiceId: number) => call<InvoiceBalance>('invoice_balance', { invoiceId }),
  recordPayment: (invoiceId: number, payment: PaymentInputDto) => call<Recorded>('record_payment', { invoiceId, payment }),
  recordPaymentFor: (invoices: Array<PaymentShareDto>, payment: PaymentInputDto) => call<Recorded>('record_payment_for', { invoices, payment }),
  payments: (after: string | null, limit: number) => call<PaymentPage>('payments', { after, limit }),
  globalInvoicePreview: (periodicidad: string, desde: string, hasta: string) => call<GlobalInvoicePreview>('global_invoice_preview', { periodicidad, desde, hasta }),
  createGlobalInvoice: (periodicidad: string, desde: string, hasta: string) => call<GlobalInvoiceResult>('create_global_invoice', { periodicidad, desde, hasta }),
  recordTicket: (saleId: string, ticket: TicketDraftDto) => call<Recorded>('record_ticket', { saleId, ticket }),
  ticketsOfDay: (day: string | null) => call<DayTickets>('tickets_of_day', { day }),
  invoiceAsides: (invoiceIds: Array<number>) => call<Array<InvoiceAside>>('invoice_asides', { invoiceIds }),
  printPdf: (invoiceId: number) => call<SavedFileDto>('print_pdf', { invoiceId }),
  savePdfAs: (invoiceId: number, path: string) => call<SavedFileDto>('save_pdf_as', { invoiceId, path }),
  pdfFileName: (invoiceId: number) => call<string>('pdf_file_name', { invoiceId }),
  emisorLogo: () => call<LogoInfo | null>('emisor_logo'),
  saveLogo: (path: string) => call<LogoInfo>('save_logo', { path }),
  clearLogo: () => call<LogoInfo | null>('clear_logo'),
  monthReport: (month: string) => call<MonthReport>('month_report', { month }),
  exportMonth: (month: string, format: MonthExportDto) => call<SavedFileDto>('export_month', { month, format }),
  importScreeningList: (path: string, listDate: string | null, skipBadLines: boolean) => call<ScreeningImport>('import_screening_list', { path, listDate, skipBadLines }),
  screeningCheck: (rfc: string) => call<ScreeningStatus>('screening_check', { rfc }),
  roleLocks: () => call<Array<RoleLockDto>>('role_locks'),
  unlockRole: (role: Role, pin: SecretText) => call<Array<RoleLockDto>>('unlock_role', { role, pin }),
  lockRole: (role: Role) => call<Array<RoleLockDto>>('lock_role', { role }),
  leaveRole: (role: Role) => call<Array<RoleLockDto>>('leave_role', { role }),
  setRolePin: (role: Role, pin: SecretText, proof: RoleProofDto) => call<Array<RoleLockDto>>('set_role_pin', { role, pin, proof }),
  backups: () => call<BackupsDto>('backups'),
  saveBackups: (policy: BackupPolicy) => call<BackupsDto>('save_backups', { policy }),
  backupNow: () => call<BackupsDto>('backup_now'),
  restorePreview: (path: string) => call<RestorePreviewDto>('restore_preview', { path }),
  restoreBackup: (path: string) => call<RestoredDto>('restore_backup', { path }),
  customers: (query: string | null) => call<Array<Customer>>('customers', { query }),
  saveCustomer: (id: number | null, input: CustomerInput) => call<Customer>('save_customer', { id, input }),
  deleteCustomer: (id: number) => call<Array<Customer>>('delete_customer', { id }),
  importCustomers: (path: string) => call<CsvImport>('import_customers', { path }),
  exportCustomers: () => call<SavedFileDto>('export_customers'),
  products: (query: string | null) => call<Array<ProductDto>>('products', { query }),
  saveProduct: (id: number | null, input: ProductInput) => call<ProductDto>('save_product', { id, input }),
  deleteProduct: (id: number) => call<Array<ProductDto>>('delete_product', { id }),
  importProducts: (path: string) => call<CsvImport>('import_products', { path }),
  exportProducts: () => call<SavedFileDto>('export_products'),
  catalogSearch: (catalogo: Catalogo, text: string, limit: number) => call<Array<CatalogEntryDto>>('catalog_search', { catalogo, text, limit }),
  catalogVersion: () => call<CatalogVersionDto>('catalog_version'),
  fiscalOptions: (rfc: string, regimen: string | null, metodoPago: string | null) => call<OpcionesFiscales>('fiscal_options', { rfc, regimen, metodoPago }),
  priceWithoutIva: (precio: string, cantidad: string, tasa: string, moneda: string) => call<PrecioSinIva | null>('price_without_iva', { precio, cantidad, tasa, moneda }),
  credentialStore: () => call<CredentialStoreDto>('credential_store'),
  aboutTimbra: () => call<AboutDto>('about_timbra'),
  exportDiagnostic: () => call<SavedFileDto>('export_diagnostic'),
  updateSettings: () => call<UpdatesDto>('update_settings'),
  saveUpdateUrl: (url: string | null) => call<UpdatesDto>('save_update_url', { url }),
  checkUpdate: () => call<UpdateOfferDto | null>('check_update'),
  installUpdate: (version: string) => call<UpdateInstalledDto>('install_update', { version }),
  satPage: () => call<SatPageDto>('sat_page'),
  saveEfirma: (cerPath: string, keyPath: string, password: SecretText) => call<SatPageDto>('save_efirma', { cerPath, keyPath, password }),
  satReconcile: (desde: string, hasta: string) => call<SatPageDto>('sat_reconcile', { desde, hasta }),
};

export type Api = typeof api;

export const EVENTS = {
  invoiceChanged: 'invoice-changed',
  countsChanged: 'counts-changed',
  drainProgress: 'drain-progress',
  exportProgress: 'export-progress',
} as const;

export const events = {
  /** An invoice's state, notes or evidence changed. */
  invoiceChanged: (cb: (payload: InvoiceChangedDto) => void) => on<InvoiceChangedDto>(EVENTS.invoiceChanged, cb),
  /** The Bandeja's counters changed. */
  countsChanged: (cb: (payload: Counts) => void) => on<Counts>(EVENTS.countsChanged, cb),
  /** The drain's counters since the app started. */
  drainProgress: (cb: (payload: DrainProgress) => void) => on<DrainProgress>(EVENTS.drainProgress, cb),
  /** A bulk export's progress (invoices written of the total). */
  exportProgress: (cb: (payload: ExportProgressDto) => void) => on<ExportProgressDto>(EVENTS.exportProgress, cb),
};
