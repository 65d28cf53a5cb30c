//! `--log-map`: the fields of a JSON log this tool does not recognise, named by the user, and
//! the errors that say what is wrong with such a map. Their text is shown as the tool's own
//! error message.

use serde_json::Value;

use super::times::DurationUnit;

/// `--log-map`: the fields of a JSON log this tool does not recognise. Field names may be
/// nested paths (`request.method`). Written as `key=FIELD,...` or as a JSON object of the same
/// keys (inline or in a file):
///
/// | key | meaning |
/// |---|---|
/// | `time` | when the request ended (Unix seconds/ms/µs/ns, or ISO 8601) |
/// | `start` | when it started, instead of `time` |
/// | `method`, `path`, `status` | request method, target (path and query), response status |
/// | `duration` | how long it took; `duration_unit=s|ms|us|ns` (default s) |
/// | `req.NAME`, `resp.NAME` | a field holding request / response header NAME |
/// | `request_headers`, `response_headers` | a field holding an object of headers (values strings or arrays) |
/// | `client`, `connection` | client `ip[:port]`, connection identifier |
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogMap {
    pub(crate) time: Option<String>,
    pub(crate) start: Option<String>,
    pub(crate) method: Option<String>,
    pub(crate) path: Option<String>,
    pub(crate) status: Option<String>,
    pub(crate) duration: Option<String>,
    pub(crate) duration_unit: DurationUnit,
    /// (header name, field) pairs.
    pub(crate) request_headers: Vec<(String, String)>,
    pub(crate) response_headers: Vec<(String, String)>,
    pub(crate) request_header_object: Option<String>,
    pub(crate) response_header_object: Option<String>,
    pub(crate) client: Option<String>,
    pub(crate) connection: Option<String>,
    /// `--log-format`: the lines are text in this nginx `log_format`, not JSON.
    pub(crate) text: Option<super::textformat::TextFormat>,
}

/// What is wrong with a `--log-map`.
#[derive(Debug, thiserror::Error)]
pub enum LogMapError {
    /// A part of `key=FIELD,...` without `=`.
    #[error("{0:?} is not key=FIELD")]
    NotKeyField(String),
    #[error("not a JSON object: {0}")]
    NotJson(serde_json::Error),
    #[error("not a JSON object")]
    NotAnObject,
    /// A `--log-format` that cannot be read.
    #[error("{0}")]
    Format(String),
    /// A JSON map whose value for this key is not a string.
    #[error("{0}: the field name must be a string")]
    FieldNotString(String),
    #[error("{0}: empty field name")]
    EmptyField(String),
    #[error("duration_unit {0:?}: use s, ms, us or ns")]
    DurationUnit(String),
    #[error(
        "unknown key {0:?}: use time, start, method, path, status, duration, \
         duration_unit, req.HEADER, resp.HEADER, request_headers, response_headers, \
         client, connection"
    )]
    UnknownKey(String),
    /// Keys every map needs, missing from this one.
    #[error("the log map needs {}", .0.join(", "))]
    Missing(Vec<&'static str>),
}

impl LogMap {
    /// `--log-format`: text lines in an nginx `log_format` (or `combined`), read as the nginx
    /// variables it names.
    pub fn text_format(spec: &str) -> Result<LogMap, LogMapError> {
        Ok(LogMap {
            text: Some(super::textformat::TextFormat::parse(spec)?),
            ..LogMap::default()
        })
    }

    /// The lines are text, not JSON.
    pub fn is_text(&self) -> bool {
        self.text.is_some()
    }

    /// `key=FIELD,key=FIELD,...`.
    pub fn parse(spec: &str) -> Result<LogMap, LogMapError> {
        let mut map = LogMap::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| LogMapError::NotKeyField(part.to_string()))?;
            map.set(k.trim(), v.trim())?;
        }
        map.check()?;
        Ok(map)
    }

    /// A JSON object of the same keys; `request_headers` / `response_headers` may also be an
    /// object of header name → field.
    pub fn from_json(text: &str) -> Result<LogMap, LogMapError> {
        let v: Value = serde_json::from_str(text).map_err(LogMapError::NotJson)?;
        let obj = v.as_object().ok_or(LogMapError::NotAnObject)?;
        let mut map = LogMap::default();
        for (k, v) in obj {
            match v {
                Value::String(s) => map.set(k, s)?,
                Value::Object(o) if k == "request_headers" || k == "response_headers" => {
                    for (name, field) in o {
                        let field = field
                            .as_str()
                            .ok_or_else(|| LogMapError::FieldNotString(format!("{k}.{name}")))?;
                        let side = if k == "request_headers" {
                            "req."
                        } else {
                            "resp."
                        };
                        map.set(&format!("{side}{name}"), field)?;
                    }
                }
                _ => return Err(LogMapError::FieldNotString(k.clone())),
            }
        }
        map.check()?;
        Ok(map)
    }

    fn set(&mut self, key: &str, field: &str) -> Result<(), LogMapError> {
        if field.is_empty() {
            return Err(LogMapError::EmptyField(key.to_string()));
        }
        let f = Some(field.to_string());
        for (short, long, headers) in [
            ("req.", "request_header.", &mut self.request_headers),
            ("resp.", "response_header.", &mut self.response_headers),
        ] {
            if let Some(name) = key.strip_prefix(short).or_else(|| key.strip_prefix(long)) {
                headers.push((name.to_ascii_lowercase(), field.to_string()));
                return Ok(());
            }
        }
        match key {
            "time" | "end" | "end_time" => self.time = f,
            "start" | "start_time" => self.start = f,
            "method" => self.method = f,
            "path" | "uri" | "target" => self.path = f,
            "status" => self.status = f,
            "duration" => self.duration = f,
            "duration_unit" => {
                self.duration_unit = match field {
                    "s" | "sec" | "secs" | "seconds" => DurationUnit::Seconds,
                    "ms" | "millis" | "milliseconds" => DurationUnit::Millis,
                    "us" | "µs" | "micros" | "microseconds" => DurationUnit::Micros,
                    "ns" | "nanos" | "nanoseconds" => DurationUnit::Nanos,
                    _ => return Err(LogMapError::DurationUnit(field.to_string())),
                }
            }
            "request_headers" => self.request_header_object = f,
            "response_headers" => self.response_header_object = f,
            "client" => self.client = f,
            "connection" => self.connection = f,
            _ => return Err(LogMapError::UnknownKey(key.to_string())),
        }
        Ok(())
    }

    fn check(&self) -> Result<(), LogMapError> {
        let mut missing = Vec::new();
        if self.time.is_none() && self.start.is_none() {
            missing.push("time (or start)");
        }
        if self.method.is_none() {
            missing.push("method");
        }
        if self.path.is_none() {
            missing.push("path");
        }
        if self.status.is_none() {
            missing.push("status");
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(LogMapError::Missing(missing))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_map_forms() {
        let m = LogMap::parse(
            "time=ts,method=m,path=p,status=s,duration=d,duration_unit=ms,req.Mcp-Session-Id=sid",
        )
        .unwrap();
        assert_eq!(m.time.as_deref(), Some("ts"));
        assert_eq!(m.duration_unit, DurationUnit::Millis);
        assert_eq!(
            m.request_headers,
            [("mcp-session-id".to_string(), "sid".to_string())]
        );
        let j = LogMap::from_json(r#"{"start":"t","method":"m","path":"p","status":"s","response_headers":{"Mcp-Session-Id":"rsid"}}"#).unwrap();
        assert_eq!(
            j.response_headers,
            [("mcp-session-id".to_string(), "rsid".to_string())]
        );
        assert!(
            LogMap::parse("method=m")
                .unwrap_err()
                .to_string()
                .contains("time")
        );
        assert_eq!(
            LogMap::parse("time=t,method=m,path=p,status=s,colour=c")
                .unwrap_err()
                .to_string(),
            "unknown key \"colour\": use time, start, method, path, status, duration, \
             duration_unit, req.HEADER, resp.HEADER, request_headers, response_headers, \
             client, connection"
        );
    }

    #[test]
    fn log_map_errors_read_as_before() {
        let parse = |s: &str| LogMap::parse(s).unwrap_err().to_string();
        let json = |s: &str| LogMap::from_json(s).unwrap_err().to_string();
        assert_eq!(parse("nonsense"), "\"nonsense\" is not key=FIELD");
        assert_eq!(parse("time="), "time: empty field name");
        assert_eq!(
            parse("time=t,duration_unit=h"),
            "duration_unit \"h\": use s, ms, us or ns"
        );
        assert_eq!(
            parse("method=m"),
            "the log map needs time (or start), path, status"
        );
        assert_eq!(json("[1]"), "not a JSON object");
        assert_eq!(
            json("{"),
            "not a JSON object: EOF while parsing an object at line 1 column 1"
        );
        assert_eq!(
            json(r#"{"time":1}"#),
            "time: the field name must be a string"
        );
        assert_eq!(
            json(r#"{"request_headers":{"A":1}}"#),
            "request_headers.A: the field name must be a string"
        );
    }
}
