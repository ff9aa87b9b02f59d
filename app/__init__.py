"""Attention Atlas app frame: entrypoint, UI strings, figure builders, cached loaders."""
