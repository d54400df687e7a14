//! Which endpoint of the join service a request's method and path name.
//! Resolved before anything else happens, by taking prefixes and suffixes
//! off the path (never by slicing at computed offsets), so no path can make
//! the router panic; a host name in a path is checked here, once. This is
//! the entry point of the router's fuzz target.

use crate::types::NodeName as Hostname;
use crate::wire::{
    CA_PATH, CERTIFICATE_SUFFIX, CHALLENGE_PATH, CONFIG_SUFFIX, HEALTH_PATH, IMAGE_SEGMENT,
    JOIN_PATH, NODES_PATH, OLD_JOIN_PATH, PROGRESS_PATH, RELEASE_SEGMENT, UPGRADE_SUFFIX,
    is_image_id, is_release_file_name, is_release_id,
};

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /v1/health`.
    Health,
    /// `POST /v2/join`.
    Join,
    /// `POST /v2/join/challenge`: a fresh challenge for a re-join's proof.
    JoinChallenge,
    /// `POST /v1/join`: an older dcn, refused with advice.
    OldJoin,
    /// `POST /v1/progress`.
    Progress,
    /// `GET /v1/nodes/{host}`.
    NodeStatus(Hostname),
    /// `GET /v1/nodes/{host}/config`.
    FetchConfig(Hostname),
    /// `POST /v1/nodes/{host}/config`.
    ReportConfig(Hostname),
    /// `POST /v1/nodes/{host}/certificate`.
    NodeCertificate(Hostname),
    /// `POST /v1/nodes/{host}/upgrade`.
    NodeUpgrade(Hostname),
    /// `GET /v1/nodes/{host}/release/{id}/{file}`.
    ReleaseFile {
        host: Hostname,
        release: String,
        file: String,
    },
    /// `GET /v1/nodes/{host}/image/{id}`.
    ImageFile { host: Hostname, image: String },
    /// `GET /v1/ca`.
    TrustedCas,
    /// A node path whose host part is not a host name (shown in the log,
    /// escaped, as the client sent it).
    NotAHostName(String),
    /// Anything else.
    NotFound,
}

impl Route {
    /// The route of `method` (as sent) and `path` (the URI's path, also of
    /// an absolute-form request).
    pub fn resolve(method: &str, path: &str) -> Route {
        match (method, path) {
            ("GET", HEALTH_PATH) => return Route::Health,
            ("POST", JOIN_PATH) => return Route::Join,
            ("POST", CHALLENGE_PATH) => return Route::JoinChallenge,
            ("POST", OLD_JOIN_PATH) => return Route::OldJoin,
            ("POST", PROGRESS_PATH) => return Route::Progress,
            ("GET", CA_PATH) => return Route::TrustedCas,
            _ => {}
        }
        let Some(rest) = path.strip_prefix(NODES_PATH) else {
            return Route::NotFound;
        };
        if let Some((name, file)) = rest.split_once(RELEASE_SEGMENT) {
            return Self::release_file(method, name, file);
        }
        if let Some((name, image)) = rest.split_once(IMAGE_SEGMENT) {
            return Self::image_file(method, name, image);
        }
        #[derive(PartialEq)]
        enum Resource {
            Node,
            Config,
            Certificate,
            Upgrade,
        }
        let (name, resource) = if let Some(name) = rest.strip_suffix(CONFIG_SUFFIX) {
            (name, Resource::Config)
        } else if let Some(name) = rest.strip_suffix(CERTIFICATE_SUFFIX) {
            (name, Resource::Certificate)
        } else if let Some(name) = rest.strip_suffix(UPGRADE_SUFFIX) {
            (name, Resource::Upgrade)
        } else {
            (rest, Resource::Node)
        };
        let hostname = match name.parse::<Hostname>() {
            Ok(h) => h,
            Err(_) if method == "GET" || (resource != Resource::Node && method == "POST") => {
                return Route::NotAHostName(name.to_string());
            }
            Err(_) => return Route::NotFound,
        };
        match (method, resource) {
            ("GET", Resource::Node) => Route::NodeStatus(hostname),
            ("GET", Resource::Config) => Route::FetchConfig(hostname),
            ("POST", Resource::Config) => Route::ReportConfig(hostname),
            ("POST", Resource::Certificate) => Route::NodeCertificate(hostname),
            ("POST", Resource::Upgrade) => Route::NodeUpgrade(hostname),
            _ => Route::NotFound,
        }
    }

    /// `GET {name}/image/{id}` under the nodes' prefix: the host name and
    /// the image id checked.
    fn image_file(method: &str, name: &str, image: &str) -> Route {
        if method != "GET" {
            return Route::NotFound;
        }
        let Ok(host) = name.parse::<Hostname>() else {
            return Route::NotAHostName(name.to_string());
        };
        match is_image_id(image) {
            true => Route::ImageFile {
                host,
                image: image.to_string(),
            },
            false => Route::NotFound,
        }
    }

    /// `GET {name}/release/{id}/{file}` under the nodes' prefix: the host
    /// name, the release id and the file name each checked, so no path
    /// reaches outside a release's folder.
    fn release_file(method: &str, name: &str, tail: &str) -> Route {
        if method != "GET" {
            return Route::NotFound;
        }
        let Ok(host) = name.parse::<Hostname>() else {
            return Route::NotAHostName(name.to_string());
        };
        match tail.split_once('/') {
            Some((id, file)) if is_release_id(id) && is_release_file_name(file) => {
                Route::ReleaseFile {
                    host,
                    release: id.to_string(),
                    file: file.to_string(),
                }
            }
            _ => Route::NotFound,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(h: &str) -> Hostname {
        h.parse().unwrap()
    }

    #[test]
    fn every_endpoint_is_found_by_its_method_and_path() {
        let cases = [
            ("GET", "/v1/health", Route::Health),
            ("POST", "/v2/join", Route::Join),
            ("POST", "/v2/join/challenge", Route::JoinChallenge),
            ("POST", "/v1/join", Route::OldJoin),
            ("POST", "/v1/progress", Route::Progress),
            (
                "GET",
                "/v1/nodes/edge1-n1",
                Route::NodeStatus(host("edge1-n1")),
            ),
            (
                "GET",
                "/v1/nodes/edge1-n1/config",
                Route::FetchConfig(host("edge1-n1")),
            ),
            (
                "POST",
                "/v1/nodes/edge1-n1/config",
                Route::ReportConfig(host("edge1-n1")),
            ),
            (
                "POST",
                "/v1/nodes/edge1-n1/certificate",
                Route::NodeCertificate(host("edge1-n1")),
            ),
            ("GET", "/v1/ca", Route::TrustedCas),
            (
                "POST",
                "/v1/nodes/edge1-n1/upgrade",
                Route::NodeUpgrade(host("edge1-n1")),
            ),
            (
                "GET",
                "/v1/nodes/edge1-n1/release/0.2.1-00ff/dcn",
                Route::ReleaseFile {
                    host: host("edge1-n1"),
                    release: "0.2.1-00ff".into(),
                    file: "dcn".into(),
                },
            ),
            (
                "GET",
                "/v1/nodes/edge1-n1/image/a1be349a-f5cc-4d7d-90b9-b105fdf37df7",
                Route::ImageFile {
                    host: host("edge1-n1"),
                    image: "a1be349a-f5cc-4d7d-90b9-b105fdf37df7".into(),
                },
            ),
        ];
        for (method, path, want) in cases {
            assert_eq!(Route::resolve(method, path), want, "{method} {path}");
        }
    }

    /// `/v1/nodes/config` both starts with the nodes prefix and ends with
    /// the config suffix, which overlap: the old router sliced `p[10..9]`
    /// and the service died.
    #[test]
    fn paths_whose_prefix_and_suffix_overlap_resolve_without_panicking() {
        for method in ["GET", "POST", "PUT", "DELETE", "get", ""] {
            for path in [
                "/v1/nodes/config",
                "/v1/nodes/",
                "/v1/nodes",
                "/v1/nodes//config",
                "/v1/nodes/config/config",
                "/v1/nodes/onfig",
                "/v1/nodes/é/config",
                "/v1/nodes/../config",
                "/v1/nodes/certificate",
                "/v1/nodes//certificate",
                "/v1/nodes/certificate/config",
                "/v1/nodes/config/certificate",
                "/v1/nodes/upgrade",
                "/v1/nodes//upgrade",
                "/v1/nodes/release/",
                "/v1/nodes//release/x/dcn",
                "/v1/nodes/a/release/",
                "/v1/nodes/a/release//",
                "/v1/nodes/a/release/../dcn",
                "/v1/nodes/a/release/x/../../etc/shadow",
                "/v1/nodes/a/release/x/pool/a.deb",
                "/v1/nodes/a/release/release/release/dcn",
                "/v1/nodes/a/image/",
                "/v1/nodes//image/ab",
                "/v1/nodes/a/image/a/../b",
                "",
                "/",
                "*",
            ] {
                let _ = Route::resolve(method, path);
            }
        }
        // "config" is a host name: its status needs its node secret.
        assert_eq!(
            Route::resolve("GET", "/v1/nodes/config"),
            Route::NodeStatus(host("config"))
        );
        assert_eq!(
            Route::resolve("GET", "/v1/nodes//config"),
            Route::NotAHostName(String::new())
        );
        assert_eq!(Route::resolve("POST", "/v1/nodes/config"), Route::NotFound);
        assert_eq!(
            Route::resolve("GET", "/v1/nodes/a/b/config"),
            Route::NotAHostName("a/b".into())
        );
        assert_eq!(
            Route::resolve("POST", "/v1/nodes//certificate"),
            Route::NotAHostName(String::new())
        );
        assert_eq!(
            Route::resolve("POST", "/v1/nodes/config/certificate"),
            Route::NodeCertificate(host("config"))
        );
        for path in [
            "/v1/nodes/a/release/../dcn",
            "/v1/nodes/a/release/x/../../etc/shadow",
            "/v1/nodes/a/release/x/pool/a.deb",
            "/v1/nodes/a/release/x/",
            "/v1/nodes/a/release/x/.deb",
            "/v1/nodes/a/image/../../x",
            "/v1/nodes/a/image/",
            "/v1/nodes/a/image/zz",
        ] {
            assert_eq!(Route::resolve("GET", path), Route::NotFound, "{path}");
        }
        assert_eq!(
            Route::resolve("GET", "/v1/nodes/a b/release/x/dcn"),
            Route::NotAHostName("a b".into())
        );
    }

    #[test]
    fn wrong_methods_are_not_found() {
        for (method, path) in [
            ("POST", "/v1/health"),
            ("GET", "/v2/join"),
            ("PUT", "/v1/nodes/edge1-n1/config"),
            ("DELETE", "/v1/nodes/edge1-n1"),
            ("GET", "/v1/progress"),
            ("GET", "/v1/nodes/edge1-n1/certificate"),
            ("POST", "/v1/ca"),
            ("GET", "/v1/nodes/edge1-n1/upgrade"),
            ("POST", "/v1/nodes/edge1-n1/release/x/dcn"),
        ] {
            assert_eq!(
                Route::resolve(method, path),
                Route::NotFound,
                "{method} {path}"
            );
        }
    }
}
