"""The parse layer: a source file's text as Python reads it (`source`, `lines`), how deeply
it nests before any parser sees it (`nesting`), LibCST's tree built from Python's own parse
(`builder`, with `nodes`), where the nodes of a tree are (`positions`), code for a node
(`codegen`), and nodes as JSON data for module summaries (`node_data`).

Only this package touches LibCST's private API (its code generation state, node
construction without validation); everything above it reads LibCST's public tree.
"""
