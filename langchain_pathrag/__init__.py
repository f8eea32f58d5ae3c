"""LangChain adapter for pathrag (retriever, indexer, prompt, chain, tool, CLI)."""
