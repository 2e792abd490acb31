//! The tool registry: what the page registered, checked once at registration, so a model's call can be
//! validated against the tool's parameter schema before any JavaScript runs.

use jsonschema::Validator;
use serde_json::{json, Value};

use crate::error::{Result, WispError};
use crate::grammar::{too_deep, MAX_SCHEMA_DEPTH};

/// The longest tool name, the limit the OpenAI function-calling API puts on names (chat templates and
/// models are trained on that shape).
const MAX_NAME_LEN: usize = 64;

/// A tool as the page describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// `[a-zA-Z0-9_-]{1,64}`: what the model writes to call it.
    pub name: String,
    /// Shown to the model: when and why to use the tool.
    pub description: String,
    /// A JSON Schema with `"type": "object"`: tool arguments are always named.
    pub parameters: Value,
}

/// One thing wrong with a call's arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgumentProblem {
    /// JSON Pointer into the arguments (`""` is the arguments object itself, `/filters/0` a nested value).
    pub path: String,
    /// What the schema expected there, in words the model can act on.
    pub message: String,
}

#[derive(Debug)]
struct RegisteredTool {
    spec: ToolSpec,
    validator: Validator,
}

/// The registered tools, in registration order (the order the model sees them in).
#[derive(Debug, Default)]
pub struct ToolRegistry {
    tools: Vec<RegisteredTool>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool after checking its name and compiling its parameter schema; nothing is registered
    /// when it fails (`INVALID_TOOL` or `DUPLICATE_TOOL`).
    pub fn register(&mut self, spec: ToolSpec) -> Result<()> {
        check_name(&spec.name)?;
        if self.get(&spec.name).is_some() {
            return Err(WispError::DuplicateTool(spec.name));
        }
        let validator = compile_parameters(&spec.name, &spec.parameters)?;
        self.tools.push(RegisteredTool { spec, validator });
        Ok(())
    }

    /// Removes a tool; false when there was none by that name.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.tools.len();
        self.tools.retain(|tool| tool.spec.name != name);
        self.tools.len() != before
    }

    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.find(name).map(|tool| &tool.spec)
    }

    /// The tool names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|tool| tool.spec.name.as_str())
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Checks a model's arguments against the tool's schema, reporting every problem rather than the
    /// first, so the model can fix them all in one retry.
    pub fn validate_arguments(&self, name: &str, arguments: &Value) -> Result<()> {
        let tool = self
            .find(name)
            .ok_or_else(|| WispError::UnknownTool(name.to_string()))?;
        let problems: Vec<ArgumentProblem> = tool
            .validator
            .iter_errors(arguments)
            .map(|error| ArgumentProblem {
                path: error.instance_path().to_string(),
                message: error.to_string(),
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(WispError::InvalidToolArguments {
                tool: name.to_string(),
                problems,
            })
        }
    }

    /// The tool list in the OpenAI shape that Hugging Face chat templates expect as `tools`.
    pub fn openai_tools(&self) -> Value {
        let tools: Vec<Value> = self
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.spec.name,
                        "description": tool.spec.description,
                        "parameters": tool.spec.parameters,
                    }
                })
            })
            .collect();
        Value::Array(tools)
    }

    fn find(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools.iter().find(|tool| tool.spec.name == name)
    }
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(WispError::InvalidTool(
            "a tool name must not be empty".into(),
        ));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(WispError::InvalidTool(format!(
            "tool name '{name}' is longer than {MAX_NAME_LEN} characters"
        )));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(WispError::InvalidTool(format!(
            "tool name '{name}' contains {bad:?}; use only letters, digits, '_' and '-'"
        )));
    }
    Ok(())
}

/// Compiles the schema, which also checks it against its draft's meta-schema. With the crate's network and
/// file resolution left out, a `$ref` to anything outside the schema fails here instead of at call time.
fn compile_parameters(name: &str, parameters: &Value) -> Result<Validator> {
    if parameters.get("type").and_then(Value::as_str) != Some("object") {
        return Err(WispError::InvalidTool(format!(
            "parameters of tool '{name}' must be a JSON Schema with \"type\": \"object\""
        )));
    }
    if too_deep(parameters) {
        return Err(WispError::InvalidTool(format!(
            "parameters of tool '{name}' are nested more than {MAX_SCHEMA_DEPTH} levels deep"
        )));
    }
    jsonschema::validator_for(parameters).map_err(|error| {
        WispError::InvalidTool(format!(
            "parameters of tool '{name}' are not a valid JSON Schema: {error}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, parameters: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("the {name} tool"),
            parameters,
        }
    }

    fn weather() -> ToolSpec {
        tool(
            "get_weather",
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer", "minimum": 1},
                    "where": {
                        "type": "object",
                        "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                        "required": ["lat", "lon"],
                    },
                },
                "required": ["city"],
                "additionalProperties": false,
            }),
        )
    }

    fn registry() -> ToolRegistry {
        let mut tools = ToolRegistry::new();
        tools.register(weather()).unwrap();
        tools
    }

    fn problems(tools: &ToolRegistry, arguments: Value) -> Vec<ArgumentProblem> {
        match tools.validate_arguments("get_weather", &arguments) {
            Err(WispError::InvalidToolArguments { tool, problems }) => {
                assert_eq!(tool, "get_weather");
                problems
            }
            other => panic!("expected INVALID_TOOL_ARGUMENTS, got {other:?}"),
        }
    }

    fn code_of(result: Result<()>) -> &'static str {
        result.unwrap_err().code()
    }

    #[test]
    fn valid_arguments_pass() {
        let tools = registry();
        tools
            .validate_arguments("get_weather", &json!({"city": "Zürich"}))
            .unwrap();
        tools
            .validate_arguments(
                "get_weather",
                &json!({"city": "東京", "unit": "celsius", "days": 3, "where": {"lat": 35.6, "lon": 139.7}}),
            )
            .unwrap();
    }

    #[test]
    fn missing_required_property_is_reported_at_the_root() {
        let found = problems(&registry(), json!({"unit": "celsius"}));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "");
        assert!(found[0].message.contains("city"), "{found:?}");
    }

    #[test]
    fn wrong_type_and_enum_are_both_reported_with_paths() {
        let found = problems(&registry(), json!({"city": 42, "unit": "kelvin"}));
        let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            paths.contains(&"/city") && paths.contains(&"/unit"),
            "{found:?}"
        );
        let unit = found.iter().find(|p| p.path == "/unit").unwrap();
        assert!(unit.message.contains("kelvin"), "{unit:?}");
    }

    #[test]
    fn additional_properties_are_refused() {
        let found = problems(&registry(), json!({"city": "Oslo", "country": "NO"}));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("country"), "{found:?}");
    }

    #[test]
    fn nested_object_problems_point_inside_it() {
        let found = problems(
            &registry(),
            json!({"city": "Lima", "where": {"lat": "south"}}),
        );
        let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
        assert!(paths.contains(&"/where/lat"), "{found:?}");
        assert!(
            paths.contains(&"/where"),
            "missing lon is reported on the nested object: {found:?}"
        );
    }

    #[test]
    fn the_error_message_lists_every_problem() {
        let message = registry()
            .validate_arguments("get_weather", &json!({"city": 1, "days": 0}))
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("arguments for tool 'get_weather' do not match its parameters: ")
        );
        assert!(
            message.contains("/city: ") && message.contains("/days: "),
            "{message}"
        );
    }

    #[test]
    fn unknown_tool_is_coded() {
        assert_eq!(
            code_of(registry().validate_arguments("get_wether", &json!({}))),
            "UNKNOWN_TOOL"
        );
    }

    #[test]
    fn duplicate_names_are_refused_and_the_first_stays() {
        let mut tools = registry();
        let again = tool("get_weather", json!({"type": "object"}));
        assert_eq!(code_of(tools.register(again)), "DUPLICATE_TOOL");
        assert_eq!(tools.get("get_weather"), Some(&weather()));
    }

    #[test]
    fn bad_names_are_refused() {
        let mut tools = ToolRegistry::new();
        let long = "a".repeat(65);
        for name in ["", "get weather", "naïve", "a.b", long.as_str()] {
            assert_eq!(
                code_of(tools.register(tool(name, json!({"type": "object"})))),
                "INVALID_TOOL",
                "{name:?}"
            );
        }
        let longest = "a".repeat(64);
        for name in ["a", "get-weather_2", "X", longest.as_str()] {
            tools
                .register(tool(name, json!({"type": "object"})))
                .unwrap();
        }
        assert!(tools.get("get weather").is_none());
    }

    #[test]
    fn invalid_schemas_are_refused_with_the_coded_error() {
        let mut tools = ToolRegistry::new();
        let bad = [
            json!("object"),
            json!({"type": "string"}),
            json!({"properties": {"a": {"type": "string"}}}),
            json!({"type": "object", "properties": {"a": {"type": "strng"}}}),
            json!({"type": "object", "required": "a"}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}),
            // Resolution over the network is compiled out, so a remote reference cannot be used.
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}),
        ];
        for parameters in bad {
            let error = tools.register(tool("t", parameters.clone())).unwrap_err();
            assert_eq!(error.code(), "INVALID_TOOL", "{parameters}: {error}");
        }
        assert!(tools.is_empty());
    }

    /// `{"type": "object", "properties": {"a": ...}}` nested `levels` times: each level is two objects deep.
    fn nested(levels: usize) -> Value {
        (0..levels).fold(
            json!({"type": "string"}),
            |inner, _| json!({"type": "object", "properties": {"a": inner}}),
        )
    }

    #[test]
    fn schemas_deeper_than_the_limit_are_refused_before_compiling() {
        let mut tools = ToolRegistry::new();
        let fits = MAX_SCHEMA_DEPTH / 2 - 1;
        tools.register(tool("fits", nested(fits))).unwrap();
        for levels in [fits + 1, 200] {
            let error = tools.register(tool("deep", nested(levels))).unwrap_err();
            assert_eq!(error.code(), "INVALID_TOOL");
            assert!(
                error.to_string().contains("nested more than 64 levels"),
                "{error}"
            );
        }
        assert!(tools.get("deep").is_none());
    }

    #[test]
    fn openai_shape_keeps_registration_order() {
        let mut tools = registry();
        tools
            .register(tool("now", json!({"type": "object", "properties": {}})))
            .unwrap();
        let rendered = tools.openai_tools();
        assert_eq!(rendered.as_array().map(Vec::len), Some(2));
        assert_eq!(
            rendered[1],
            json!({
                "type": "function",
                "function": {
                    "name": "now",
                    "description": "the now tool",
                    "parameters": {"type": "object", "properties": {}},
                }
            })
        );
        assert_eq!(rendered[0]["function"]["name"], "get_weather");
        assert_eq!(rendered[0]["function"]["parameters"], weather().parameters);
    }
}
