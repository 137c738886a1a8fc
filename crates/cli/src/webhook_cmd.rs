//! `timbra webhook …`: incoming sources (generic or Stripe, with their mapping to a sale),
//! the events received (`list`, with the reason of every unmapped one), outgoing endpoints,
//! their deliveries and `redeliver`. Signing secrets are named (`--secret-env`), never given.

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};
use outbox::webhooks::{DeliveryStatus, EventStatus, EventType, SaleMapping, SourceFormat, WebhookEndpoint, WebhookSource};

use crate::input::read_text;
use crate::shell::{failure, open, print_json, print_out, resolve_invoice, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Clone, Copy, ValueEnum)]
pub enum FormatArg {
    /// JSON con id y type, firmado con X-Timbra-Signature.
    Generic,
    /// Eventos de Stripe (payment_intent.succeeded, checkout.session.completed), Stripe-Signature.
    Stripe,
}

#[derive(Subcommand)]
pub enum WebhookCommand {
    /// Orígenes de webhooks entrantes (pagos): POST /v1/webhooks/NOMBRE.
    #[command(subcommand)]
    Source(SourceCommand),
    /// Destinos de webhooks salientes (invoice.stamped, invoice.needs_attention, cancellation.updated).
    #[command(subcommand)]
    Endpoint(EndpointCommand),
    /// Eventos recibidos, del más reciente al más antiguo, con su resultado y motivo.
    List {
        /// Solo en este estado: received, recorded, unmapped, invalid, conflict, ignored.
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[arg(long)]
        json: bool,
    },
    /// Entregas salientes (con --delivery-id: sus intentos).
    Deliveries {
        #[arg(long)]
        invoice: Option<String>,
        /// pending, delivered o failed.
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        delivery_id: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Vuelve a encolar una entrega fallida (mismo X-Timbra-Delivery-Id).
    Redeliver {
        delivery_id: String,
        #[command(flatten)]
        who: ActorArgs,
    },
}

#[derive(Subcommand)]
pub enum SourceCommand {
    /// Agrega o reemplaza un origen.
    Add {
        name: String,
        #[arg(long, value_enum)]
        format: FormatArg,
        /// Variable de entorno con el secreto de firma (se guarda el nombre).
        #[arg(long, value_name = "VAR")]
        secret_env: String,
        /// Tolerancia de la marca de tiempo de la firma, en segundos.
        #[arg(long, default_value_t = outbox::webhooks::DEFAULT_TOLERANCE_SECS)]
        tolerance_secs: i64,
        /// Mapeo a la venta (JSON: {"fields": {"/sale_id": "/data/id", …}, "constants": {…}}); Stripe
        /// usa el de metadata si se omite.
        #[arg(long, value_name = "ARCHIVO.json")]
        mapping: Option<PathBuf>,
        /// Tipos de evento que se vuelven ventas (obligatorio con generic; Stripe: los dos de pago). Un
        /// reembolso o reverso nunca es venta.
        #[arg(long = "event-type")]
        event_types: Vec<String>,
        #[command(flatten)]
        who: ActorArgs,
    },
    List {
        #[arg(long)]
        json: bool,
    },
    Remove {
        name: String,
        #[command(flatten)]
        who: ActorArgs,
    },
}

#[derive(Subcommand)]
pub enum EndpointCommand {
    /// Agrega o reemplaza un destino.
    Add {
        name: String,
        #[arg(long)]
        url: String,
        #[arg(long, value_name = "VAR")]
        secret_env: String,
        /// Eventos que recibe (por omisión: todos).
        #[arg(long = "event")]
        events: Vec<String>,
        #[command(flatten)]
        who: ActorArgs,
    },
    List {
        #[arg(long)]
        json: bool,
    },
    Remove {
        name: String,
        #[command(flatten)]
        who: ActorArgs,
    },
}

pub fn webhook(db: Option<&str>, cmd: WebhookCommand) -> Result<u8, Failure> {
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        match cmd {
            WebhookCommand::Source(SourceCommand::Add {
                name,
                format,
                secret_env,
                tolerance_secs,
                mapping,
                event_types,
                who,
            }) => {
                let actor = who.actor_or("cli", "soporte")?;
                let mapping: Option<SaleMapping> = match mapping {
                    Some(p) => {
                        let text = read_text(&p, "el mapeo")?;
                        Some(serde_json::from_str(&text).map_err(|e| Failure::invalid(format!("{}: {e}", p.display())))?)
                    }
                    None => None,
                };
                let source = match (format, mapping) {
                    (FormatArg::Stripe, m) => {
                        let mut s = WebhookSource::stripe_preset(&name, &secret_env);
                        if let Some(m) = m {
                            s.mapping = m;
                        }
                        s
                    }
                    (FormatArg::Generic, Some(m)) => WebhookSource {
                        name,
                        format: SourceFormat::Generic,
                        secret_env,
                        tolerance_secs,
                        event_types: vec![],
                        mapping: m,
                    },
                    (FormatArg::Generic, None) => return Err(Failure::invalid("un origen generic necesita --mapping ARCHIVO.json")),
                };
                let source = WebhookSource {
                    tolerance_secs,
                    event_types: if event_types.is_empty() {
                        source.event_types.clone()
                    } else {
                        event_types
                    },
                    ..source
                };
                let all = o.set_webhook_source(source, &actor).await.map_err(|e| failure(e, "webhook: "))?;
                print_json(&all)?;
            }
            WebhookCommand::Source(SourceCommand::List { json }) => {
                let all = o.webhook_sources().await.map_err(|e| failure(e, ""))?;
                let review = if json {
                    Vec::new()
                } else {
                    o.webhook_review().await.map_err(|e| failure(e, ""))?
                };
                if json {
                    print_json(&all)?;
                } else {
                    for s in all {
                        let types = if s.event_types.is_empty() {
                            "SIN TIPOS DE EVENTO: no acepta ninguno".to_string()
                        } else {
                            s.event_types.join(",")
                        };
                        print_out(&format!(
                            "{}\t{}\tsecreto en {}\t/v1/webhooks/{}\t{types}",
                            s.name,
                            format!("{:?}", s.format).to_lowercase(),
                            s.secret_env,
                            s.name
                        ))?;
                    }
                }
                // Events of the last days that did not become a sale: a person looks at them.
                for r in &review {
                    let text = format!(
                        "por revisar: {} evento(s) de {} en estado {}{} (último {}): timbra webhook list --status {}",
                        r.count,
                        r.source,
                        r.status.as_str(),
                        r.reason_code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default(),
                        r.last_received_at.format("%Y-%m-%d %H:%M UTC"),
                        r.status.as_str()
                    );
                    print_out(&text)?;
                }
            }
            WebhookCommand::Source(SourceCommand::Remove { name, who }) => {
                let actor = who.actor_or("cli", "soporte")?;
                o.remove_webhook_source(&name, &actor).await.map_err(|e| failure(e, "webhook: "))?;
                print_out(&format!("origen {name} eliminado (sus eventos se conservan)"))?;
            }
            WebhookCommand::Endpoint(EndpointCommand::Add {
                name,
                url,
                secret_env,
                events,
                who,
            }) => {
                let actor = who.actor_or("cli", "soporte")?;
                let events = events
                    .iter()
                    .map(|e| {
                        EventType::parse(e).ok_or_else(|| {
                            Failure::invalid(format!(
                                "--event {e:?}: use invoice.stamped, invoice.needs_attention o cancellation.updated"
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let all = o
                    .set_webhook_endpoint(
                        WebhookEndpoint {
                            name,
                            url,
                            secret_env,
                            events,
                        },
                        &actor,
                    )
                    .await
                    .map_err(|e| failure(e, "webhook: "))?;
                print_json(&all)?;
            }
            WebhookCommand::Endpoint(EndpointCommand::List { json }) => {
                let all = o.webhook_endpoints().await.map_err(|e| failure(e, ""))?;
                if json {
                    print_json(&all)?;
                } else {
                    for e in all {
                        let events: Vec<&str> = e.events.iter().map(|t| t.as_str()).collect();
                        print_out(&format!("{}\t{}\tsecreto en {}\t{}", e.name, e.url, e.secret_env, events.join(",")))?;
                    }
                }
            }
            WebhookCommand::Endpoint(EndpointCommand::Remove { name, who }) => {
                let actor = who.actor_or("cli", "soporte")?;
                o.remove_webhook_endpoint(&name, &actor)
                    .await
                    .map_err(|e| failure(e, "webhook: "))?;
                print_out(&format!("destino {name} eliminado"))?;
            }
            WebhookCommand::List { status, limit, json } => {
                let status = match status {
                    Some(s) => Some(EventStatus::parse(&s).ok_or_else(|| {
                        Failure::invalid(format!(
                            "--status {s:?}: use received, recorded, unmapped, invalid, conflict o ignored"
                        ))
                    })?),
                    None => None,
                };
                let events = o.webhook_events(status, limit).await.map_err(|e| failure(e, ""))?;
                if json {
                    print_json(&events)?;
                } else {
                    for e in events {
                        let reason = e
                            .reason
                            .as_ref()
                            .and_then(|r| r.get("fields"))
                            .and_then(|f| f.as_array())
                            .map(|fields| {
                                fields
                                    .iter()
                                    .map(|f| {
                                        format!(
                                            "{}: {}",
                                            f.get("field").and_then(|v| v.as_str()).unwrap_or(""),
                                            f.get("message").and_then(|v| v.as_str()).unwrap_or("")
                                        )
                                    })
                                    .collect::<Vec<_>>()
                                    .join("; ")
                            })
                            .unwrap_or_default();
                        print_out(&format!(
                            "{}\t{}\t{}\t{}\t{}\t{}\t{reason}",
                            e.received_at.to_rfc3339(),
                            e.source,
                            e.event_id,
                            e.event_type,
                            e.status.as_str(),
                            e.sale_id.unwrap_or_default()
                        ))?;
                    }
                }
            }
            WebhookCommand::Deliveries {
                invoice,
                status,
                delivery_id,
                json,
            } => {
                if let Some(id) = delivery_id {
                    let attempts = o.webhook_delivery_attempts(&id).await.map_err(|e| failure(e, ""))?;
                    print_json(&attempts)?;
                } else {
                    let r = match &invoice {
                        Some(id) => Some(resolve_invoice(&o, id).await?),
                        None => None,
                    };
                    let status = match status {
                        Some(s) => Some(
                            DeliveryStatus::parse(&s)
                                .ok_or_else(|| Failure::invalid(format!("--status {s:?}: use pending, delivered o failed")))?,
                        ),
                        None => None,
                    };
                    let all = o.webhook_deliveries(r.as_ref(), status, 200).await.map_err(|e| failure(e, ""))?;
                    if json {
                        print_json(&all)?;
                    } else {
                        for d in all {
                            print_out(&format!(
                                "{}\t{}\t{}\t{}\t{} intento(s)\t{}",
                                d.delivery_id,
                                d.event_type,
                                d.endpoint,
                                d.status.as_str(),
                                d.attempts_count,
                                d.last_error.unwrap_or_default()
                            ))?;
                        }
                    }
                }
            }
            WebhookCommand::Redeliver { delivery_id, who } => {
                let actor = who.actor_or("cli", "soporte")?;
                o.redeliver(&delivery_id, &actor).await.map_err(|e| failure(e, "webhook: "))?;
                print_out(&format!("entrega {delivery_id} encolada de nuevo"))?;
            }
        }
        o.store().close().await;
        Ok(exit::OK)
    })
}
