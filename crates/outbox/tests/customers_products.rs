//! Customers and products: validation against SAT's catalogs (nothing written for a bad add),
//! CRUD, search, CSV import with bad lines reported by number, export → import round trip, and
//! a sale made from them staying as recorded when they change.

mod common;

use cfdi::sale_draft::{ReceptorDraft, SaleDraft};
use common::*;
use outbox::customers::CustomerInput;
use outbox::products::{Iva, ProductInput};
use outbox::OutboxError;

fn universidad() -> CustomerInput {
    CustomerInput {
        rfc: "ure180429tm6".into(),
        nombre: "UNIVERSIDAD ROBOTICA ESPAÑOLA".into(),
        cp: "86991".into(),
        regimen: "601".into(),
        uso: Some("G01".into()),
        forma_pago: Some("03".into()),
        metodo_pago: Some("PUE".into()),
        emails: vec!["compras@ure.mx; pagos@ure.mx".into()],
    }
}

fn cafe() -> ProductInput {
    ProductInput {
        sku: "CAF-01".into(),
        descripcion: "Café de olla".into(),
        clave_prod_serv: "50201706".into(),
        clave_unidad: "H87".into(),
        unidad: Some("Pieza".into()),
        precio: "50.00".into(),
        objeto_imp: Some("02".into()),
        iva: Some("16".into()),
        ..Default::default()
    }
}

fn invalid_fields(err: OutboxError) -> Vec<(String, String)> {
    match err {
        OutboxError::Invalid(v) => v.0.into_iter().map(|f| (f.field, f.message)).collect(),
        other => panic!("not a validation error: {other:?}"),
    }
}

fn has(fields: &[(String, String)], field: &str, needle: &str) -> bool {
    fields.iter().any(|(f, m)| f == field && m.contains(needle))
}

async fn customer_crud_and_search(backend: Backend) {
    let e = bare(backend).await;
    let c = e.outbox.add_customer(&universidad(), &staff()).await.expect("add");
    assert_eq!(c.rfc, "URE180429TM6", "RFC upper-cased");
    assert_eq!(c.emails, vec!["compras@ure.mx", "pagos@ure.mx"]);
    assert_eq!(c.updated_by.name, "ana");

    let mut persona = CustomerInput {
        rfc: "CACX7605101P8".into(),
        nombre: "XOCHILT CASAS CHAVEZ".into(),
        cp: "36257".into(),
        regimen: "605".into(),
        uso: Some("D01".into()),
        ..Default::default()
    };
    let x = e.outbox.add_customer(&persona, &staff()).await.expect("add persona física");

    // Search by RFC prefix or words of the name, accents and case ignored.
    let names = |v: Vec<outbox::customers::Customer>| v.into_iter().map(|c| c.id).collect::<Vec<_>>();
    assert_eq!(names(e.outbox.customers(Some("ure18")).await.unwrap()), vec![c.id]);
    assert_eq!(names(e.outbox.customers(Some("espanola robo")).await.unwrap()), vec![c.id]);
    assert_eq!(names(e.outbox.customers(Some("xóchilt")).await.unwrap()), vec![x.id]);
    assert_eq!(e.outbox.customers(None).await.unwrap().len(), 2);

    // The same RFC twice is refused, nothing written.
    let err = e.outbox.add_customer(&universidad(), &staff()).await.expect_err("duplicate");
    assert!(has(&invalid_fields(err), "rfc", "ya es del cliente"));
    assert_eq!(e.count("customers").await, 2);

    // Update, then delete.
    persona.regimen = "612".into();
    persona.uso = Some("G03".into());
    let updated = e.outbox.update_customer(x.id, &persona, &staff()).await.expect("update");
    assert_eq!((updated.regimen.as_str(), updated.uso.as_deref()), ("612", Some("G03")));
    assert_eq!(e.outbox.customer(x.id).await.unwrap().regimen, "612");
    e.outbox.delete_customer(x.id, &staff()).await.expect("delete");
    assert!(matches!(e.outbox.customer(x.id).await, Err(OutboxError::NotFound { .. })));
    assert!(matches!(
        e.outbox.delete_customer(x.id, &staff()).await,
        Err(OutboxError::NotFound { .. })
    ));
    assert_eq!(e.count("customers").await, 1);

    // Generic RFCs: many customers, told apart by name.
    for nombre in ["CLIENTE EN MOSTRADOR", "VENTA AL PUBLICO"] {
        let g = CustomerInput {
            rfc: "XAXX010101000".into(),
            nombre: nombre.into(),
            cp: "42501".into(),
            regimen: "616".into(),
            uso: Some("S01".into()),
            ..Default::default()
        };
        e.outbox.add_customer(&g, &staff()).await.expect("generic customer");
    }
    assert_eq!(e.count("customers").await, 3);
}

async fn a_bad_customer_names_each_field_and_writes_nothing(backend: Backend) {
    let e = bare(backend).await;
    let cases: Vec<(&str, CustomerInput, &str, &str)> = vec![
        (
            "bad RFC",
            CustomerInput {
                rfc: "URE18042".into(),
                ..universidad()
            },
            "rfc",
            "no tiene la forma de un RFC",
        ),
        (
            "CP not in c_CodigoPostal",
            CustomerInput {
                cp: "00001".into(),
                ..universidad()
            },
            "cp",
            "00001 no existe",
        ),
        (
            "régimen unknown",
            CustomerInput {
                regimen: "699".into(),
                ..universidad()
            },
            "regimen",
            "no existe en el catálogo",
        ),
        (
            "régimen of a persona física for a moral",
            CustomerInput {
                regimen: "605".into(),
                uso: None,
                ..universidad()
            },
            "regimen",
            "no aplica a personas morales",
        ),
        (
            "régimen of a moral for a física",
            CustomerInput {
                rfc: "CACX7605101P8".into(),
                uso: None,
                ..universidad()
            },
            "regimen",
            "no aplica a personas físicas",
        ),
        (
            "uso not allowed with the régimen",
            CustomerInput {
                uso: Some("D01".into()),
                ..universidad()
            },
            "uso",
            "no aplica a personas morales",
        ),
        (
            "generic RFC with a régimen other than 616",
            CustomerInput {
                rfc: "XEXX010101000".into(),
                uso: None,
                ..universidad()
            },
            "regimen",
            "debe ser 616",
        ),
        (
            "forma unknown",
            CustomerInput {
                forma_pago: Some("77".into()),
                ..universidad()
            },
            "forma_pago",
            "no existe",
        ),
        (
            "PPD with a forma other than 99",
            CustomerInput {
                metodo_pago: Some("PPD".into()),
                ..universidad()
            },
            "forma_pago",
            "99",
        ),
        (
            "bad e-mail",
            CustomerInput {
                emails: vec!["compras@".into()],
                ..universidad()
            },
            "email",
            "no es una dirección",
        ),
        (
            "no name",
            CustomerInput {
                nombre: "  ".into(),
                ..universidad()
            },
            "nombre",
            "falta",
        ),
    ];
    for (case, input, field, needle) in cases {
        let err = e.outbox.add_customer(&input, &staff()).await.expect_err(case);
        let fields = invalid_fields(err);
        assert!(has(&fields, field, needle), "{case}: expected {field} ~ {needle:?}, got {fields:?}");
        assert_eq!(e.count("customers").await, 0, "{case}: something was written");
    }
}

async fn product_crud_taxes_and_bad_adds(backend: Backend) {
    let e = bare(backend).await;
    let p = e.outbox.add_product(&cafe(), &staff()).await.expect("add");
    assert_eq!((p.precio.as_str(), p.iva), ("50", Some(Iva::Tasa16)));
    let honorarios = ProductInput {
        sku: "SRV-HON".into(),
        descripcion: "Honorarios por asesoría contable".into(),
        clave_prod_serv: "84111500".into(),
        clave_unidad: "e48".into(),
        precio: "1000".into(),
        iva: Some("16".into()),
        ret_isr: Some("0.10".into()),
        ret_iva: Some("0.106667".into()),
        ..Default::default()
    };
    let h = e.outbox.add_product(&honorarios, &staff()).await.expect("add service");
    assert_eq!(h.clave_unidad, "E48", "unit code as SAT writes it");
    assert_eq!((h.ret_isr.as_deref(), h.ret_iva.as_deref()), (Some("0.100000"), Some("0.106667")));
    let line = h.concepto("2");
    assert_eq!(line.no_identificacion.as_deref(), Some("SRV-HON"));
    assert_eq!(line.traslados.len(), 1);
    assert_eq!(
        line.retenciones.iter().map(|t| t.impuesto.as_str()).collect::<Vec<_>>(),
        vec!["001", "002"]
    );

    assert_eq!(e.outbox.products(Some("caf")).await.unwrap()[0].id, p.id);
    assert_eq!(e.outbox.products(Some("asesoria")).await.unwrap()[0].id, h.id);

    let cases: Vec<(&str, ProductInput, &str, &str)> = vec![
        (
            "clave not in c_ClaveProdServ",
            ProductInput {
                clave_prod_serv: "99999999".into(),
                ..cafe()
            },
            "clave_prod_serv",
            "99999999 no existe",
        ),
        (
            "unit not in c_ClaveUnidad",
            ProductInput {
                clave_unidad: "ZZZ".into(),
                ..cafe()
            },
            "clave_unidad",
            "ZZZ no existe",
        ),
        (
            "price not a number",
            ProductInput {
                precio: "cincuenta".into(),
                ..cafe()
            },
            "precio",
            "no es un importe",
        ),
        (
            "negative price",
            ProductInput {
                precio: "-1".into(),
                ..cafe()
            },
            "precio",
            "negativo",
        ),
        (
            "7 decimals",
            ProductInput {
                precio: "1.1234567".into(),
                ..cafe()
            },
            "precio",
            "6 decimales",
        ),
        (
            "IVA 15",
            ProductInput {
                iva: Some("15".into()),
                ..cafe()
            },
            "iva",
            "16, 8, 0 o exento",
        ),
        (
            "IEPS rate not in c_TasaOCuota",
            ProductInput {
                ieps: Some("0.77".into()),
                ..cafe()
            },
            "ieps",
            "c_TasaOCuota",
        ),
        (
            "objeto 02 without taxes",
            ProductInput { iva: None, ..cafe() },
            "objeto_imp",
            "al menos un impuesto",
        ),
        (
            "objeto 01 with taxes",
            ProductInput {
                objeto_imp: Some("01".into()),
                ..cafe()
            },
            "objeto_imp",
            "no lleva impuestos",
        ),
        ("same SKU", cafe(), "sku", "ya es del producto"),
    ];
    for (case, input, field, needle) in cases {
        let err = e.outbox.add_product(&input, &staff()).await.expect_err(case);
        let fields = invalid_fields(err);
        assert!(has(&fields, field, needle), "{case}: expected {field} ~ {needle:?}, got {fields:?}");
        assert_eq!(e.count("products").await, 2, "{case}: something was written");
    }

    let exento = ProductInput {
        iva: Some("exento".into()),
        precio: "48.5".into(),
        ..cafe()
    };
    let u = e.outbox.update_product(p.id, &exento, &staff()).await.expect("update");
    assert_eq!((u.precio.as_str(), u.iva), ("48.5", Some(Iva::Exento)));
    assert_eq!(u.concepto("1").traslados[0].tipo_factor, "Exento");
    e.outbox.delete_product(p.id, &staff()).await.expect("delete");
    assert_eq!(e.count("products").await, 1);
}

async fn customer_csv_keeps_good_lines_reports_bad_ones_and_round_trips(backend: Backend) {
    let e = bare(backend).await;
    let csv = "rfc,nombre,cp,regimen,uso,forma_pago,metodo_pago,email\n\
URE180429TM6,UNIVERSIDAD ROBOTICA ESPAÑOLA,86991,601,G01,03,PUE,compras@ure.mx;pagos@ure.mx\n\
CACX7605101P8,XOCHILT CASAS CHAVEZ,00001,605,D01,,,\n\
\n\
\"EKU9003173C9\",\"ESCUELA KEMPER URGATE, S.A.\",42501,601,G03,99,PPD,\n\
BAD,NADIE,42501,699,,,,\n\
URE180429TM6,OTRA VEZ,86991,601,G01,,,\n";
    let r = e.outbox.import_customers_csv(csv.as_bytes(), &staff()).await.expect("import");
    assert_eq!((r.added, r.updated), (2, 0));
    let lines: Vec<String> = r.bad_lines.iter().map(|b| b.to_string()).collect();
    assert!(
        lines.contains(&"línea 3: cp: el código postal 00001 no existe en el catálogo c_CodigoPostal del SAT".to_string()),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.starts_with("línea 6: rfc: ")), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("línea 6: regimen: ")), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("línea 7: rfc: el mismo cliente ya viene en la línea 2")),
        "{lines:?}"
    );
    assert!(r.bad_lines.iter().all(|b| [3, 6, 7].contains(&b.line)), "{lines:?}");
    assert_eq!(e.count("customers").await, 2);

    // Export, clear, import the export: the same customers.
    let exported = e.outbox.export_customers_csv().await.unwrap();
    assert!(
        exported.starts_with("rfc,nombre,cp,regimen,uso,forma_pago,metodo_pago,email\n"),
        "{exported}"
    );
    assert!(exported.contains("\"ESCUELA KEMPER URGATE, S.A.\""), "{exported}");
    let before: Vec<_> = e.outbox.customers(None).await.unwrap().iter().map(|c| c.record()).collect();
    for c in e.outbox.customers(None).await.unwrap() {
        e.outbox.delete_customer(c.id, &staff()).await.unwrap();
    }
    let again = e.outbox.import_customers_csv(exported.as_bytes(), &staff()).await.unwrap();
    assert_eq!((again.added, again.updated, again.bad_lines.len()), (2, 0, 0));
    let after: Vec<_> = e.outbox.customers(None).await.unwrap().iter().map(|c| c.record()).collect();
    assert_eq!(before, after);

    // Importing it once more updates by RFC instead of adding.
    let third = e.outbox.import_customers_csv(exported.as_bytes(), &staff()).await.unwrap();
    assert_eq!((third.added, third.updated), (0, 2));

    // A wrong header imports nothing.
    let err = e
        .outbox
        .import_customers_csv(b"rfc,nombre,codigo\nURE180429TM6,X,86991\n", &staff())
        .await
        .expect_err("bad header");
    assert!(has(&invalid_fields(err), "archivo", "columna desconocida \"codigo\""));
}

async fn product_csv_round_trip_and_bad_lines(backend: Backend) {
    let e = bare(backend).await;
    let csv = "sku,descripcion,clave_prod_serv,clave_unidad,unidad,precio,objeto_imp,iva,ieps,ret_isr,ret_iva\n\
CAF-01,Café de olla,50201706,H87,Pieza,50.00,02,16,,,\n\
TOR-01,Tortillas de maíz (kg),50221300,KGM,,22.5,02,0,,,\n\
REF-01,Refresco de cola 600 ml,50202306,H87,,18,02,16,0.08,,\n\
X-1,Nada,99999999,H87,,10,02,16,,,\n\
X-2,Otra,01010101,H87,,diez,02,16,,,\n\
X-3,Tercera,01010101,H87,,10,02,16,0.77,,\n";
    let r = e.outbox.import_products_csv(csv.as_bytes(), &staff()).await.expect("import");
    let lines: Vec<String> = r.bad_lines.iter().map(|b| b.to_string()).collect();
    assert_eq!((r.added, r.updated), (3, 0), "{lines:?}");
    assert_eq!(
        lines,
        vec![
            "línea 5: clave_prod_serv: la clave 99999999 no existe en el catálogo c_ClaveProdServ del SAT".to_string(),
            "línea 6: precio: \"diez\" no es un importe (use punto decimal, p. ej. 500.00)".to_string(),
            "línea 7: ieps: la tasa 0.77 de IEPS trasladado no está en el catálogo c_TasaOCuota".to_string(),
        ]
    );
    let exported = e.outbox.export_products_csv().await.unwrap();
    let before: Vec<_> = e
        .outbox
        .products(None)
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.sku, p.precio, p.iva, p.ieps))
        .collect();
    assert_eq!(before.len(), 3);
    for p in e.outbox.products(None).await.unwrap() {
        e.outbox.delete_product(p.id, &staff()).await.unwrap();
    }
    let again = e.outbox.import_products_csv(exported.as_bytes(), &staff()).await.unwrap();
    assert_eq!((again.added, again.bad_lines.len()), (3, 0));
    let after: Vec<_> = e
        .outbox
        .products(None)
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.sku, p.precio, p.iva, p.ieps))
        .collect();
    assert_eq!(before, after);
}

async fn a_sale_from_a_customer_and_products_stays_as_recorded_when_they_change(backend: Backend) {
    let e = env(backend).await;
    let c = e.outbox.add_customer(&universidad(), &staff()).await.unwrap();
    let p = e.outbox.add_product(&cafe(), &staff()).await.unwrap();
    let draft = SaleDraft {
        sale_id: "desde-catalogo-1".into(),
        kind: "ingreso".into(),
        occurred_at: "2026-11-29T12:00:00".into(),
        forma_pago: c.forma_pago.clone(),
        metodo_pago: c.metodo_pago.clone(),
        moneda: Some("MXN".into()),
        receptor: ReceptorDraft {
            rfc: c.rfc.clone(),
            nombre: c.nombre.clone(),
            domicilio_fiscal: c.cp.clone(),
            regimen_fiscal: c.regimen.clone(),
            uso_cfdi: c.uso.clone().unwrap_or_default(),
        },
        conceptos: vec![p.concepto("3")],
        ..Default::default()
    };
    let recorded = e.outbox.record_sale_json(&draft.to_json(), None, &staff()).await.expect("record");
    let body = |pool: &sqlx::AnyPool| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, String>("SELECT body FROM sales WHERE sale_id = 'desde-catalogo-1'")
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let before = body(e.pool()).await;
    assert!(
        before.contains("UNIVERSIDAD ROBOTICA ESPAÑOLA") && before.contains("CAF-01"),
        "{before}"
    );

    let renamed = CustomerInput {
        nombre: "UNIVERSIDAD ROBOTICA".into(),
        cp: "42501".into(),
        ..universidad()
    };
    e.outbox.update_customer(c.id, &renamed, &staff()).await.unwrap();
    let repriced = ProductInput {
        precio: "99".into(),
        ..cafe()
    };
    e.outbox.update_product(p.id, &repriced, &staff()).await.unwrap();
    e.outbox.delete_customer(c.id, &staff()).await.unwrap();
    e.outbox.delete_product(p.id, &staff()).await.unwrap();

    assert_eq!(body(e.pool()).await, before, "the recorded sale changed");
    let detail = e.outbox.invoice(&outbox::model::InvoiceRef::Id(recorded.invoice_id)).await.unwrap();
    assert_eq!(detail.invoice.receptor_nombre, "UNIVERSIDAD ROBOTICA ESPAÑOLA");
}

crate::conformance!(
    customer_crud_and_search,
    a_bad_customer_names_each_field_and_writes_nothing,
    product_crud_taxes_and_bad_adds,
    customer_csv_keeps_good_lines_reports_bad_ones_and_round_trips,
    product_csv_round_trip_and_bad_lines,
    a_sale_from_a_customer_and_products_stays_as_recorded_when_they_change,
);
