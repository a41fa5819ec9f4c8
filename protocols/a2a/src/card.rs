//! The agent card: the public card served at `/.well-known/agent-card.json` (the generated 1.0
//! type, with absolute interface URLs for each binding and revision) and the extended card for
//! authenticated callers. 0.3 is announced the 1.0 way, as further `supportedInterfaces` entries
//! whose `protocolVersion` is `0.3`; a client asking for 0.3 reads the card in 0.3's shape
//! ([`AgentCards::document`]).

use serde_json::{Value, json};

use crate::compat::Revision;
use crate::v1::types::{AgentCard, AgentInterface};

/// The well-known path of the public card.
pub const WELL_KNOWN_PATH: &str = "/.well-known/agent-card.json";

/// The JSON-RPC binding's name as the card spells it.
pub const JSONRPC_BINDING: &str = "JSONRPC";
/// The REST binding's name as the card spells it.
pub const HTTP_JSON_BINDING: &str = "HTTP+JSON";

/// The protocol version the 1.0 interfaces announce (and the `A2A-Version` value selecting
/// them).
pub const PROTOCOL_VERSION: &str = "1.0";
/// The protocol version the 0.3 interfaces announce.
pub const LEGACY_PROTOCOL_VERSION: &str = "0.3";

/// Where each binding is served, as absolute URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// The JSON-RPC endpoint's URL.
    pub jsonrpc: String,
    /// The REST endpoint's base URL.
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

    /// Every interface, JSON-RPC first (the preferred one), 1.0 before 0.3; each binding serves
    /// both revisions at one URL, told apart by `A2A-Version`.
    pub fn interfaces(&self) -> Vec<AgentInterface> {
        [PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSION]
            .into_iter()
            .flat_map(|version| {
                [
                    (JSONRPC_BINDING, &self.jsonrpc),
                    (HTTP_JSON_BINDING, &self.rest),
                ]
                .map(|(binding, url)| AgentInterface {
                    protocol_binding: binding.to_owned(),
                    protocol_version: version.to_owned(),
                    tenant: None,
                    url: url.clone(),
                })
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

    /// The card served to every caller.
    pub fn public(&self) -> &AgentCard {
        &self.public
    }

    /// The extended card served to authenticated callers, if one is configured.
    pub fn extended(&self) -> Option<&AgentCard> {
        self.extended.as_ref()
    }

    /// Where each binding is served.
    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// The public card as `revision` reads it.
    pub fn document(&self, revision: Revision) -> Value {
        let card = serde_json::to_value(&self.public).unwrap_or_else(|_| json!({}));
        match revision {
            Revision::V1 => card,
            Revision::V0_3 => crate::compat::card_to_v03(&card),
        }
    }
}
