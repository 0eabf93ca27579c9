"""Embedding pytps in another harness: timing the calls an application makes with its own client
(`pytps.instrument`), any byte stream (`pytps.time_stream`, `pytps.StreamTimer`), and where the
records go (`pytps.Collector`, `pytps.BoundedCollector`, `pytps.tag`). docs/embedding.md.

Nothing here is imported by `import pytps`: each name loads on first use.
"""
