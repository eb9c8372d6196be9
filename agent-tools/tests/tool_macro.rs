//! `#[tool]` from the user's side: names, descriptions, argument docs in the schema, calls
//! through JSON (including bad arguments), direct calls of the body, and a tool's own error.

use agent_tools::{DynTool, ToolError, ToolRegistry, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
struct Item {
    /// What it is.
    name: String,
    /// How many.
    quantity: u32,
}

#[derive(Debug, thiserror::Error)]
#[error("the cart is full")]
struct CartFull;

/// Adds items to the shopping cart.
///
/// Returns the number of items in the cart.
///
/// # Arguments
///
/// * `items` - The items to add, in order.
/// * `note` - An optional note for the shopper,
///   shown at checkout.
#[tool(name = "add_to_cart")]
async fn add_items(items: Vec<Item>, note: Option<String>) -> Result<u32, CartFull> {
    let total: u32 = items.iter().map(|item| item.quantity).sum();
    if total > 10 {
        return Err(CartFull);
    }
    Ok(total + u32::from(note.is_some()))
}

/// A user type named like a generated schema.
#[derive(Debug, Deserialize, JsonSchema)]
struct SearchArgs {
    query: String,
}

/// Searches, taking a user struct named like the generated schema would be.
#[tool]
async fn search(args: SearchArgs) -> Result<String, String> {
    Ok(format!("results for {}", args.query))
}

/// Tells the time of day, always noon.
#[tool]
pub async fn clock() -> Result<&'static str, String> {
    Ok("12:00")
}

#[tokio::test]
async fn metadata_comes_from_the_fn() {
    assert_eq!(add_items::NAME, "add_to_cart");
    assert_eq!(add_items.name(), "add_to_cart");
    assert_eq!(
        add_items.description(),
        "Adds items to the shopping cart.\n\nReturns the number of items in the cart."
    );
    let schema = add_items.parameters();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["title"], "AddItemsArgs");
    assert_eq!(schema["required"], json!(["items"]));
    assert_eq!(
        schema["properties"]["items"]["description"],
        "The items to add, in order."
    );
    assert_eq!(
        schema["properties"]["note"]["description"],
        "An optional note for the shopper, shown at checkout."
    );
    // Nested types are inlined with their own docs (no `$ref`s for the model to follow).
    assert_eq!(
        schema["properties"]["items"]["items"]["properties"]["quantity"]["description"],
        "How many."
    );
    assert!(!schema.to_string().contains("$ref"), "{schema}");

    assert_eq!(
        search
            .call(json!({"args": {"query": "rust"}}))
            .await
            .unwrap(),
        json!("results for rust")
    );

    let spec = clock.spec();
    assert_eq!(spec.name, "clock");
    assert_eq!(spec.parameters["type"], "object");
}

#[tokio::test]
async fn calls_through_json_and_directly() {
    let args = json!({"items": [{"name": "apple", "quantity": 3}], "note": "ripe"});
    assert_eq!(add_items.call(args).await.unwrap(), json!(4));
    assert_eq!(clock.call(json!({})).await.unwrap(), json!("12:00"));
    assert_eq!(
        clock.call(serde_json::Value::Null).await.unwrap(),
        json!("12:00")
    );

    let direct = add_items::call(
        vec![Item {
            name: "pear".into(),
            quantity: 2,
        }],
        None,
    )
    .await
    .unwrap();
    assert_eq!(direct, 2);
}

#[tokio::test]
async fn errors_name_the_tool_and_where() {
    let bad = json!({"items": [{"name": "apple", "quantity": -1}]});
    let error = add_items.call(bad).await.unwrap_err();
    match &error {
        ToolError::InvalidArguments {
            tool,
            path,
            message,
        } => {
            assert_eq!(tool, "add_to_cart");
            assert_eq!(path, "items[0].quantity");
            assert!(message.contains("invalid value: integer `-1`"), "{message}");
        }
        other => panic!("unexpected {other:?}"),
    }

    let too_many = json!({"items": [{"name": "apple", "quantity": 11}]});
    let error = add_items.call(too_many).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool `add_to_cart` failed: the cart is full"
    );
    match error {
        ToolError::Failed { source, .. } => assert!(source.is::<CartFull>()),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn macro_tools_register_like_any_other() {
    let registry = ToolRegistry::builtins()
        .with_tool(add_items)
        .unwrap()
        .with_tool(clock)
        .unwrap();
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["echo", "datetime", "calculator", "add_to_cart", "clock"]
    );
    assert_eq!(
        registry.call("clock", json!({})).await.unwrap(),
        json!("12:00")
    );
}
