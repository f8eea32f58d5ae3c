"""``python -m langchain_pathrag.cli``: the ``pathrag`` command."""

from langchain_pathrag.cli import main

if __name__ == "__main__":
    main()
