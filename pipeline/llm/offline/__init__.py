"""The rule-based offline engine, one module per LLM stage."""
