"""Key paths on a small hand-built knowledge graph: no LLM, no network, no API key.

Run: python examples/key_paths.py
"""

from __future__ import annotations

from pathrag import Entity, NetworkXGraphStore, Relation, find_key_paths
from pathrag.query.context import build_context, build_path_texts

ENTITIES = [
    ("MARA VELLO", "person", "Harbour pilot of Saltmere who guides ships through the shoals."),
    ("SALTMERE", "location", "A fishing town on a shallow estuary."),
    ("TIDEWRIGHT & CO", "organization", "Engineering firm that designs sea defences."),
    ("NORTH SEA WALL", "object", "Flood barrier protecting Saltmere's harbour."),
    ("GREAT SURGE", "event", "The storm surge that breached the north sea wall."),
    ("IDA KESTREL", "person", "Chief engineer at Tidewright & Co."),
    ("HARBOUR BOARD", "organization", "Body that runs Saltmere's port and hires its pilots."),
    ("ESTUARY SURVEY", "concept", "Seabed survey that predicted the shoals would shift."),
]
RELATIONS = [
    ("HARBOUR BOARD", "MARA VELLO", "The Harbour Board employs Mara Vello as pilot.", "employment", 8),
    ("MARA VELLO", "SALTMERE", "Mara Vello lives and works in Saltmere.", "home", 6),
    ("HARBOUR BOARD", "SALTMERE", "The Harbour Board governs Saltmere's port.", "governance", 7),
    ("HARBOUR BOARD", "TIDEWRIGHT & CO", "The Harbour Board hired Tidewright & Co to build the wall.", "contract", 9),
    ("TIDEWRIGHT & CO", "NORTH SEA WALL", "Tidewright & Co designed and built the North Sea Wall.", "construction", 9),
    ("IDA KESTREL", "TIDEWRIGHT & CO", "Ida Kestrel leads engineering at Tidewright & Co.", "leadership", 7),
    ("IDA KESTREL", "ESTUARY SURVEY", "Ida Kestrel commissioned the Estuary Survey.", "research", 6),
    ("GREAT SURGE", "NORTH SEA WALL", "The Great Surge breached the North Sea Wall.", "breach, flood", 10),
    ("GREAT SURGE", "SALTMERE", "The Great Surge flooded the lower streets of Saltmere.", "flood", 9),
    ("MARA VELLO", "ESTUARY SURVEY", "Mara Vello's soundings were used in the Estuary Survey.", "data", 4),
]


def build_store() -> NetworkXGraphStore:
    store = NetworkXGraphStore()
    store.upsert_entities(Entity(name=n, type=t, description=d) for n, t, d in ENTITIES)
    store.upsert_relations(
        Relation(source=s, target=t, description=d, keywords=k.split(", "), weight=w) for s, t, d, k, w in RELATIONS
    )
    return store


def main() -> None:
    store = build_store()
    question = "How is Mara Vello connected to the Great Surge?"
    seeds = ["MARA VELLO", "GREAT SURGE", "NORTH SEA WALL"]  # what keyword search would pick
    paths = find_key_paths(store, seeds, top_k=5)
    print(f"{store!r}\nseeds: {', '.join(seeds)}\n")
    print(f"{'score':>7}  hops  path")
    for path in paths:
        print(f"{path.score:7.4f}  {path.hops:>4}  {' -> '.join(path.nodes)}")
    context = build_context(question, paths, build_path_texts(store, paths))
    print(f"\nContext ({context.tokens} tokens, most reliable path last):\n")
    print(context.text)


if __name__ == "__main__":
    main()
