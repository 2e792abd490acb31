//! JSON that follows a schema: the `%json` rule shared by tool calls and answers, and `response_format`
//! (OpenAI's `{ type: "json_schema", json_schema: { name, schema, strict } }` or `{ type: "json_object" }`),
//! a grammar that makes the whole answer one JSON value valid for the schema.
//!
//! The JSON uses Python's `json.dumps` separators (`", "`, `": "`) and no other whitespace: the form chat
//! templates render and the bundled model was trained on, and one a weak model cannot pad endlessly.

use serde::Deserialize;
use serde_json::{json, Value};

use super::{GrammarConstraint, GrammarEnv};
use crate::error::{Result, WispError};

/// What the answer must be, as OpenAI's `response_format` says it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawResponseFormat")]
pub enum ResponseFormat {
    /// Free text: no constraint.
    Text,
    /// Any JSON object.
    JsonObject,
    /// A JSON value valid for `json_schema.schema`.
    JsonSchema { json_schema: JsonSchemaFormat },
}

/// `response_format` as written, so that a field in the wrong place is an error rather than ignored.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResponseFormat {
    #[serde(rename = "type")]
    kind: String,
    json_schema: Option<JsonSchemaFormat>,
}

impl TryFrom<RawResponseFormat> for ResponseFormat {
    type Error = String;

    fn try_from(raw: RawResponseFormat) -> std::result::Result<Self, String> {
        match (raw.kind.as_str(), raw.json_schema) {
            ("text", None) => Ok(ResponseFormat::Text),
            ("json_object", None) => Ok(ResponseFormat::JsonObject),
            ("json_schema", Some(json_schema)) => Ok(ResponseFormat::JsonSchema { json_schema }),
            ("json_schema", None) => {
                Err("type \"json_schema\" needs json_schema: { name, schema }".into())
            }
            ("text" | "json_object", Some(_)) => Err(format!(
                "json_schema goes with type \"json_schema\", not {:?}",
                raw.kind
            )),
            (other, _) => Err(format!(
                "type is {other:?}; use \"text\", \"json_object\" or \"json_schema\""
            )),
        }
    }
}

/// OpenAI's `json_schema` object. `name`, `description` and `strict` are accepted for compatibility: the
/// answer follows the schema whatever `strict` says.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JsonSchemaFormat {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    pub schema: Value,
    #[serde(default)]
    pub strict: Option<bool>,
}

impl ResponseFormat {
    /// The schema the answer must follow; `None` for free text.
    pub fn schema(&self) -> Option<Value> {
        match self {
            ResponseFormat::Text => None,
            ResponseFormat::JsonObject => Some(json!({"type": "object"})),
            ResponseFormat::JsonSchema { json_schema } => Some(json_schema.schema.clone()),
        }
    }
}

/// The constraint of an answer in `format` (`None` for free text). The schema is checked here, before any
/// token: one that is not a valid JSON Schema object, or that the grammar compiler cannot handle
/// (look-around in a `pattern`, an unsupported keyword, an unsatisfiable schema), is `RESPONSE_FORMAT`.
pub fn response_constraint(
    env: &GrammarEnv,
    format: &ResponseFormat,
    jump_forward: bool,
) -> Result<Option<GrammarConstraint>> {
    let Some(schema) = format.schema() else {
        return Ok(None);
    };
    check_schema(&schema)?;
    let lark = format!("%llguidance {{}}\nstart: {}", json_rule(&schema));
    GrammarConstraint::new(env, lark, WispError::ResponseFormat, jump_forward).map(Some)
}

/// The deepest nesting of objects and arrays a schema may have; `MAX_DEPTH` of the package's
/// `requests.js` is the same limit, checked before a value crosses into wasm. The schema compiler and the
/// grammar builder walk schemas recursively, and a wasm32 stack has no guard page: an overflow corrupts
/// memory instead of failing, so depth is bounded before either runs.
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// Whether `value` nests objects and arrays more than `MAX_SCHEMA_DEPTH` levels deep (checked without
/// recursion, so that it is safe on any value).
pub(crate) fn too_deep(value: &Value) -> bool {
    let mut stack = vec![(value, 0usize)];
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Object(map) => Box::new(map.values()),
            Value::Array(list) => Box::new(list.iter()),
            _ => continue,
        };
        if depth >= MAX_SCHEMA_DEPTH {
            return true;
        }
        stack.extend(children.map(|child| (child, depth + 1)));
    }
    false
}

/// A schema must be a JSON Schema object, nested at most `MAX_SCHEMA_DEPTH` levels, that passes its
/// draft's meta-schema.
pub(crate) fn check_schema(schema: &Value) -> Result<()> {
    if !schema.is_object() {
        return Err(WispError::ResponseFormat(
            "the schema must be a JSON Schema object".into(),
        ));
    }
    if too_deep(schema) {
        return Err(WispError::ResponseFormat(format!(
            "the schema is nested more than {MAX_SCHEMA_DEPTH} levels deep"
        )));
    }
    jsonschema::validator_for(schema)
        .map(|_| ())
        .map_err(|e| WispError::ResponseFormat(format!("not a valid JSON Schema: {e}")))
}

/// The Lark `%json` rule for a value valid for `schema`, written with `", "` and `": "`.
pub fn json_rule(schema: &Value) -> String {
    let mut schema = schema.clone();
    bound_numbers(&mut schema);
    close_objects(&mut schema);
    if let Value::Object(fields) = &mut schema {
        fields.insert(
            "x-guidance".into(),
            json!({"item_separator": ", ", "key_separator": ": ", "whitespace_flexible": false}),
        );
    }
    format!("%json {schema}")
}

/// A Lark string literal (JSON's escapes are Lark's).
pub fn lark_string(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

/// JSON allows numbers no `f64` holds (`1e999`, or 400 digits), which serde_json and JavaScript cannot
/// read, and endless fractions, which a weak model can loop on until the token budget cuts the value. So,
/// for the grammar only, a numeric schema without a bound gets JavaScript's safe-integer range as that
/// bound (no exponents then, and integers stay exact in JS), and a `number` without `multipleOf` at most
/// 10 decimals (llguidance reads `multipleOf` by repeated `* 10.0`, which 1e-11 does not survive); the
/// values still satisfy the caller's schema. Walks the subschema keywords only, so that `enum` and
/// `const` values stay as they are.
fn bound_numbers(schema: &mut Value) {
    const SAFE: i64 = (1 << 53) - 1;
    let Value::Object(fields) = schema else {
        return;
    };
    let has_type = |wanted: &[&str]| match fields.get("type") {
        Some(Value::Array(types)) => types
            .iter()
            .any(|t| t.as_str().is_some_and(|t| wanted.contains(&t))),
        Some(t) => t.as_str().is_some_and(|t| wanted.contains(&t)),
        None => false,
    };
    let is_number = has_type(&["number"]);
    if has_type(&["number", "integer"]) {
        if !fields.contains_key("minimum") && !fields.contains_key("exclusiveMinimum") {
            fields.insert("minimum".into(), json!(-SAFE));
        }
        if !fields.contains_key("maximum") && !fields.contains_key("exclusiveMaximum") {
            fields.insert("maximum".into(), json!(SAFE));
        }
    }
    if is_number && !fields.contains_key("multipleOf") {
        fields.insert("multipleOf".into(), json!(1e-10));
    }
    for (key, value) in fields.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(map) = value {
                    map.values_mut().for_each(bound_numbers);
                }
            }
            "items" | "prefixItems" | "anyOf" | "oneOf" | "allOf" => match value {
                Value::Array(list) => list.iter_mut().for_each(bound_numbers),
                other => bound_numbers(other),
            },
            "additionalProperties"
            | "additionalItems"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems" => bound_numbers(value),
            _ => {}
        }
    }
}

/// An object schema that lists its `properties` but says nothing of others allows any other key, and a weak
/// model uses that: it invents keys (SmolLM2 copies `"type"`, `"description"` and `"required"` from the
/// tool list into its arguments) until the token budget cuts the value. So, for the grammar only, such a
/// schema gets `additionalProperties: false`, as OpenAI's strict mode requires: the values it allows
/// still satisfy the caller's schema. Only plain nested objects are closed (through `properties`,
/// `patternProperties`, `items`, `prefixItems` and `additionalProperties`), never a schema with an
/// applicator (`allOf`, `anyOf`, `$ref`, ...) that could add properties of its own, nor what lies below
/// one, nor one that requires a key it does not list.
fn close_objects(schema: &mut Value) {
    const APPLICATORS: [&str; 10] = [
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "$ref",
        "if",
        "then",
        "else",
        "dependentSchemas",
        "unevaluatedProperties",
    ];
    let Value::Object(fields) = schema else {
        return;
    };
    if APPLICATORS.iter().any(|k| fields.contains_key(*k)) {
        return;
    }
    // A required key that is not listed would become impossible.
    let lists_required = match (fields.get("properties"), fields.get("required")) {
        (Some(Value::Object(listed)), Some(Value::Array(required))) => required
            .iter()
            .all(|k| k.as_str().is_some_and(|k| listed.contains_key(k))),
        (Some(Value::Object(_)), None) => true,
        _ => false,
    };
    if lists_required && !fields.contains_key("additionalProperties") {
        fields.insert("additionalProperties".into(), Value::Bool(false));
    }
    for (key, value) in fields.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" => {
                if let Value::Object(map) = value {
                    map.values_mut().for_each(close_objects);
                }
            }
            "items" | "prefixItems" => match value {
                Value::Array(list) => list.iter_mut().for_each(close_objects),
                other => close_objects(other),
            },
            "additionalProperties" => close_objects(value),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unbounded_numbers_get_the_safe_range_and_constants_stay() {
        let mut schema = json!({"type": "object", "properties": {
            "n": {"type": "number", "minimum": 0},
            "i": {"type": ["integer", "null"]},
            "list": {"type": "array", "items": {"anyOf": [{"type": "integer", "exclusiveMaximum": 3}]}},
            "e": {"enum": [{"type": "number"}]}}});
        bound_numbers(&mut schema);
        let safe = (1i64 << 53) - 1;
        let p = &schema["properties"];
        assert_eq!(
            p["n"],
            json!({"type": "number", "minimum": 0, "maximum": safe, "multipleOf": 1e-10})
        );
        assert_eq!(
            p["i"],
            json!({"type": ["integer", "null"], "minimum": -safe, "maximum": safe})
        );
        assert_eq!(
            p["list"]["items"]["anyOf"][0],
            json!({"type": "integer", "exclusiveMaximum": 3, "minimum": -safe})
        );
        assert_eq!(p["e"], json!({"enum": [{"type": "number"}]}));
    }

    #[test]
    fn plain_objects_are_closed_and_composed_ones_stay_open() {
        let mut schema = json!({"type": "object", "properties": {
            "a": {"type": "object", "properties": {"x": {"type": "string"}}},
            "b": {"type": "array", "items": {"type": "object", "properties": {}}},
            "c": {"type": "object", "properties": {"y": {}}, "additionalProperties": true},
            "d": {"properties": {"z": {}}, "anyOf": [{"properties": {"w": {}}}]},
            "e": {"type": "object"},
            "f": {"type": "object", "properties": {"u": {}}, "required": ["u", "v"]}}});
        close_objects(&mut schema);
        let p = &schema["properties"];
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(p["a"]["additionalProperties"], json!(false));
        assert_eq!(p["b"]["items"]["additionalProperties"], json!(false));
        assert_eq!(p["c"]["additionalProperties"], json!(true));
        assert_eq!(
            p["d"],
            json!({"properties": {"z": {}}, "anyOf": [{"properties": {"w": {}}}]})
        );
        assert_eq!(p["e"], json!({"type": "object"}));
        assert_eq!(p["f"].get("additionalProperties"), None);
    }

    #[test]
    fn response_format_reads_the_openai_shapes() {
        let read = |v: Value| serde_json::from_value::<ResponseFormat>(v);
        assert_eq!(read(json!({"type": "text"})).unwrap(), ResponseFormat::Text);
        let object = read(json!({"type": "json_object"})).unwrap();
        assert_eq!(object.schema(), Some(json!({"type": "object"})));
        let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        let named = read(json!({"type": "json_schema",
            "json_schema": {"name": "thing", "schema": schema, "strict": true}}))
        .unwrap();
        assert_eq!(named.schema(), Some(schema));
        // The common mistakes: the schema beside `json_schema`, no schema, an unknown type or field.
        for bad in [
            json!({"type": "json_schema", "schema": {"type": "object"}}),
            json!({"type": "json_schema", "json_schema": {"name": "x"}}),
            json!({"type": "json_schema", "json_schema": {"schema": {}, "strcit": true}}),
            json!({"type": "yaml"}),
            json!({"type": "json_object", "schema": {}}),
            json!({"type": "json_object", "json_schema": {"schema": {}}}),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn schemas_are_checked_against_the_meta_schema() {
        assert!(check_schema(&json!({"type": "object"})).is_ok());
        let nest = |levels: usize| (0..levels).fold(json!(1), |inner, _| json!({"const": [inner]}));
        // Two levels (an object and an array) a step: 32 steps are the 64 levels allowed.
        assert!(check_schema(&nest(MAX_SCHEMA_DEPTH / 2)).is_ok());
        for levels in [MAX_SCHEMA_DEPTH / 2 + 1, 200] {
            let e = check_schema(&nest(levels)).unwrap_err();
            assert_eq!(e.code(), "RESPONSE_FORMAT");
            assert!(e.to_string().contains("nested more than 64 levels"), "{e}");
        }
        for bad in [json!(true), json!({"type": 5}), json!({"minLength": -1})] {
            let e = check_schema(&bad).unwrap_err();
            assert_eq!(e.code(), "RESPONSE_FORMAT", "{bad}");
        }
    }
}
