"""Built-in data shipped as package data: rules, prompt templates, tools.json, file-type lists."""
