//! The agent card: the public card served at `/.well-known/agent-card.json` (the generated 1.0
//! type, with absolute interface URLs for each binding) and the extended card for authenticated
//! callers. The public document also carries the 0.3 connection fields (`url`,
//! `preferredTransport`, `protocolVersion`, `additionalInterfaces`), so a 0.3 client finds the
//! same endpoints; a 1.0 client reads `supportedInterfaces`.

use serde_json::{Value, json};

use crate::v1::types::{AgentCard, AgentInterface};

/// The well-known path of the public card.
pub const WELL_KNOWN_PATH: &str = "/.well-known/agent-card.json";

/// Binding names as the card spells them.
pub const JSONRPC_BINDING: &str = "JSONRPC";
pub const HTTP_JSON_BINDING: &str = "HTTP+JSON";

/// The protocol version the 1.0 interfaces announce (and the `A2A-Version` value selecting
/// them).
pub const PROTOCOL_VERSION: &str = "1.0";
/// The revision the 0.3 fields announce.
pub const LEGACY_PROTOCOL_VERSION: &str = "0.3.0";

/// Where each binding is served, as absolute URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    pub jsonrpc: String,
    pub rest: String,
}

impl Endpoints {
    /// Joins paths onto a public base URL (scheme and authority, e.g. `http://127.0.0.1:8080`).
    pub fn at(public_base_url: &str, jsonrpc_path: &str, rest_path: &str) -> Self {
        let base = public_base_url.trim_end_matches('/');
        Self {
            jsonrpc: format!("{base}{jsonrpc_path}"),
            rest: format!("{base}{rest_path}"),
        }
    }

    /// The 1.0 interfaces, JSON-RPC first (the preferred one).
    pub fn interfaces(&self) -> Vec<AgentInterface> {
        [
            (JSONRPC_BINDING, &self.jsonrpc),
            (HTTP_JSON_BINDING, &self.rest),
        ]
        .into_iter()
        .map(|(binding, url)| AgentInterface {
            protocol_binding: binding.to_owned(),
            protocol_version: PROTOCOL_VERSION.to_owned(),
            tenant: None,
            url: url.clone(),
        })
        .collect()
    }
}

/// The cards an agent serves.
#[derive(Debug, Clone)]
pub struct AgentCards {
    public: AgentCard,
    extended: Option<AgentCard>,
    endpoints: Endpoints,
}

impl AgentCards {
    /// `public` gets its interfaces from `endpoints`, and announces the extended card when
    /// there is one.
    pub fn new(mut public: AgentCard, extended: Option<AgentCard>, endpoints: Endpoints) -> Self {
        public.supported_interfaces = endpoints.interfaces();
        public.capabilities.extended_agent_card = Some(extended.is_some());
        let extended = extended.map(|mut card| {
            card.supported_interfaces = endpoints.interfaces();
            card
        });
        Self {
            public,
            extended,
            endpoints,
        }
    }

    pub fn public(&self) -> &AgentCard {
        &self.public
    }

    pub fn extended(&self) -> Option<&AgentCard> {
        self.extended.as_ref()
    }

    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// The document at the well-known path: the 1.0 card plus the 0.3 connection fields.
    pub fn public_document(&self) -> Value {
        let mut document = serde_json::to_value(&self.public).unwrap_or_else(|_| json!({}));
        let Some(fields) = document.as_object_mut() else {
            return document;
        };
        fields.insert("url".into(), json!(self.endpoints.jsonrpc));
        fields.insert("preferredTransport".into(), json!(JSONRPC_BINDING));
        fields.insert("protocolVersion".into(), json!(LEGACY_PROTOCOL_VERSION));
        fields.insert(
            "additionalInterfaces".into(),
            json!([
                {"url": self.endpoints.jsonrpc, "transport": JSONRPC_BINDING},
                {"url": self.endpoints.rest, "transport": HTTP_JSON_BINDING},
            ]),
        );
        fields.insert(
            "supportsAuthenticatedExtendedCard".into(),
            json!(self.extended.is_some()),
        );
        crate::compat::fill_legacy_card_defaults(fields);
        document
    }
}
