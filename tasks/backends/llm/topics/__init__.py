"""Topic mining: corpus readers and the filters that run before any LLM call."""
