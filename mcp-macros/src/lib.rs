//! Procedural macros for declaring MCP tools and elicitation forms.
