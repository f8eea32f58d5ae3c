"""LlamaIndex adapter for pathrag (kg extractor, property-graph retriever, QA template, query engine)."""
