//! Ajustes: the emisor and its CSD, the PACs, the drain's settings.

use super::*;

/// The CSD's two files as Ajustes chooses them.
pub(super) const CSD_CER: Accept = Accept {
    field: "cer",
    extensions: &["cer"],
    max_bytes: outbox::settings::MAX_CSD_FILE_BYTES,
};
pub(super) const CSD_KEY: Accept = Accept {
    field: "key",
    extensions: &["key"],
    max_bytes: outbox::settings::MAX_CSD_FILE_BYTES,
};

#[tauri::command]
pub async fn save_emisor(state: State<'_, AppState>, setup: EmisorSetupDto) -> Res<EmisorDto> {
    let ready = state.ready()?;
    outbox::settings::may_change_settings(&ready.actor(), "configurar el emisor y el CSD")?;
    let password = setup.password.secret().clone();
    let domain = super::emisores::setup_of(&setup)?;
    // The outbox checks everything (profile, key encrypted, password, pair, RFC, validity)
    // before storing; only then does the password go to the OS credential store.
    let cert_no = cfdi::csd::Certificate::from_der(&domain.cer)?.no_certificado().to_string();
    let stored = ready.outbox.configure_emisor(&domain, &password, &ready.actor()).await?;
    state.note_rfc(&stored.profile.rfc);
    if !crate::sandbox::is_test_certificate(&cert_no) {
        CredentialSlot::CsdPassword { no_certificado: cert_no }.store(&password)?;
    }
    Ok(convert::emisor(
        &stored,
        crate::sandbox::is_test_certificate(&stored.no_certificado),
    ))
}

/// *Renovar CSD*: the outbox checks the new CSD (a CSD, not the e.firma; the emisor's RFC; the
/// key matches and opens; valid now and ending after the current one) and keeps the old
/// certificate; only then does the password go to the OS credential store.
#[tauri::command]
pub async fn renew_csd(state: State<'_, AppState>, renewal: CsdRenewalDto) -> Res<EmisorDto> {
    let ready = state.ready()?;
    outbox::settings::may_change_settings(&ready.actor(), "renovar el CSD")?;
    let password = renewal.password.secret().clone();
    let domain = outbox::csd::CsdRenewal {
        cer: read_chosen(&renewal.cer_path, CSD_CER)?.bytes,
        key: read_chosen(&renewal.key_path, CSD_KEY)?.bytes,
        password_env: outbox::settings::DEFAULT_PASSWORD_ENV.to_string(),
    };
    let stored = ready.outbox.renew_csd(&domain, &password, &ready.actor()).await?;
    let test = crate::sandbox::is_test_certificate(&stored.no_certificado);
    if !test {
        CredentialSlot::CsdPassword {
            no_certificado: stored.no_certificado.clone(),
        }
        .store(&password)?;
    }
    Ok(convert::emisor(&stored, test))
}

/// The certificates the emisor held (the current one and those kept after a renewal).
#[tauri::command]
pub async fn csd_certificates(state: State<'_, AppState>) -> Res<Vec<outbox::csd::CertificateInfo>> {
    let ready = state.ready()?;
    Ok(ready.outbox.certificates().await?)
}

/// Configures the primary (and backup) PAC; the drain restarts on them. From then on the app is
/// out of Modo sandbox.
#[tauri::command]
pub async fn save_pacs(app: AppHandle, state: State<'_, AppState>, primary: PacInputDto, backup: Option<PacInputDto>) -> Res<PacsDto> {
    let ready = state.ready()?;
    outbox::settings::may_change_settings(&ready.actor(), "configurar los PAC")?;
    let view = crate::pac_settings::save(&ready.outbox, &primary, backup.as_ref(), &ready.actor()).await?;
    restart_drain(&app, ready).await;
    Ok(view)
}

#[tauri::command]
pub async fn save_drain(
    app: AppHandle,
    state: State<'_, AppState>,
    drain: outbox::settings::DrainSettings,
) -> Res<outbox::settings::DrainSettings> {
    let ready = state.ready()?;
    outbox::settings::may_change_settings(&ready.actor(), "cambiar los ajustes del drenado")?;
    let saved = ready.outbox.set_drain_settings(&drain, &ready.actor()).await?;
    restart_drain(&app, ready).await;
    Ok(saved)
}

/// Whether this computer's OS credential store answers (else Ajustes says that passwords are
/// kept encrypted by Timbra on this computer).
#[tauri::command]
pub async fn credential_store() -> Res<CredentialStoreDto> {
    let os_store = tauri::async_runtime::spawn_blocking(crate::credentials::os_store_answers)
        .await
        .unwrap_or(false);
    Ok(CredentialStoreDto { os_store })
}

/// *Probar conexión* for one configured PAC (by the name Ajustes lists): its account's
/// credentials, RFC and CSD against the emisor in Ajustes ([`pac_clients::account`]). In Modo
/// sandbox the names are the simulators'. A failure is an answer, never an error: each step
/// carries its code (the UI words it).
#[tauri::command]
pub async fn test_pac_connection(state: State<'_, AppState>, name: String) -> Res<pac::account::ConnectionReport> {
    let ready = state.ready()?;
    let emisor = ready
        .outbox
        .emisor_settings()
        .await?
        .ok_or(AppError::Outbox(outbox::OutboxError::NotConfigured))?;
    let expected = pac::account::Expected {
        rfc: emisor.profile.rfc.clone(),
        no_certificado: emisor.no_certificado.clone(),
    };
    let spec = match &ready.sandbox_pacs {
        Some(sims) if name == outbox::settings::DEFAULT_PAC => sims.primary.spec(Default::default(), Some(emisor.profile.rfc.clone())),
        Some(sims) if name == crate::sandbox::SANDBOX_BACKUP => sims.backup.spec(Default::default(), Some(emisor.profile.rfc.clone())),
        _ => {
            let configs = ready.outbox.pacs().await?;
            let config = configs
                .iter()
                .find(|c| c.name == name)
                .ok_or_else(|| AppError::validation("pac", "desconocido", format!("no hay un PAC llamado {name:?}")))?;
            config.spec(&crate::drain_host::StoredSecrets)?
        }
    };
    Ok(pac_clients::account::check(&name, &spec, &expected, std::sync::Arc::new(pac::SystemClock)).await)
}
